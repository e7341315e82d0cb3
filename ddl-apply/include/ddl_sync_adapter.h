/*-------------------------------------------------------------------------
 *
 * ddl_sync_adapter.h
 *	  Register a DDL replay adapter with the ddl_sync extension from C.
 *
 * A subscriber replays each DDL event with the adapter of the event's SQL dialect
 * ("postgres", "tsql", ...). ddl_sync has built-in adapters for "postgres" and "tsql"
 * (tsql-simple); an adapter registered here replaces the built-in one for its dialect in
 * every backend that loaded it, unless an enabled row of the catalog ddl_sync.adapter (an
 * adapter written in SQL) names the same dialect in the current database. The order, most
 * important first: SQL row, C registration (the last one wins), built-in.
 *
 * Installed by ddl_sync into `pg_config --includedir-server`/extension/ddl_sync/, so an
 * extension builds with PGXS and
 *	  PG_CPPFLAGS = -I$(includedir_server)/extension/ddl_sync
 *
 * Registering, from the adapter library's _PG_init:
 *
 *	  #include "postgres.h"
 *	  #include "fmgr.h"
 *	  #include "ddl_sync_adapter.h"
 *
 *	  PG_MODULE_MAGIC;
 *
 *	  static DdlSyncResult my_execute(DdlSyncContext *ctx, const char *sql);
 *
 *	  void
 *	  _PG_init(void)
 *	  {
 *		  DdlSyncAdapter adapter = {
 *			  .abi_version = DDL_SYNC_ADAPTER_ABI_VERSION,
 *			  .name = "babelfish-full",
 *			  .dialect = "tsql",
 *			  .execute_ddl = my_execute,
 *		  };
 *
 *		  ddl_sync_register(&adapter);
 *	  }
 *
 * ddl_sync_register() loads $libdir/ddl_sync (if it is not loaded yet) and calls its exported
 * function ddl_sync_register_adapter(); link nothing against ddl_sync. ddl_sync copies the
 * struct and its strings, so they may live on the stack. The registration lasts for the life
 * of the process: list the adapter library in shared_preload_libraries, so that it is loaded
 * in every backend, and in particular in the subscriptions' apply workers (background
 * workers do not read session_preload_libraries). SELECT * FROM ddl_sync.adapters() shows
 * which adapter replays each dialect in the current backend.
 *
 * Errors. ddl_sync_register_adapter() raises an ERROR (ereport) for a struct it cannot use:
 * another ABI version, or a missing name, dialect or execute_ddl. The callbacks run inside the
 * apply worker's transaction and may ereport(ERROR) like any server code: the error fails the
 * statement, and ddl_sync applies the subscription's conflict policy ('error': the apply
 * worker errors and retries; 'skip': the statement's subtransaction is rolled back and the
 * events row records the message), except for an ERROR whose SQLSTATE passes (class 40,
 * 55P03 lock_not_available, 57014 query_canceled), which the apply worker retries under either
 * policy. Returning DDL_SYNC_FATAL with ctx->message set is the policy's business, like an
 * ERROR; DDL_SYNC_RETRYABLE always has the apply worker retry the transaction. Never longjmp out of a callback other
 * than through ereport.
 *
 * ABI versioning. Any change to the structs or the meaning of a field below increments
 * DDL_SYNC_ADAPTER_ABI_VERSION; ddl_sync refuses a version it does not speak, with an ERROR
 * naming both, instead of guessing. Rebuild the adapter against the header installed with the
 * ddl_sync in use.
 *
 * Copyright: ddl_sync contributors; licence: PostgreSQL.
 *
 *-------------------------------------------------------------------------
 */
#ifndef DDL_SYNC_ADAPTER_H
#define DDL_SYNC_ADAPTER_H

#include "fmgr.h"

/* The version of the structs below. */
#define DDL_SYNC_ADAPTER_ABI_VERSION 1

/* How a step ended. */
typedef enum DdlSyncResult
{
	DDL_SYNC_SUCCESS = 0,
	/* Failed for a reason that passes (a lock timeout, a serialization failure): the apply
	 * worker retries the transaction, whatever the conflict policy. */
	DDL_SYNC_RETRYABLE = 1,
	/* Failed for a reason retrying will not fix (a syntax error, a missing object). */
	DDL_SYNC_FATAL = 2
} DdlSyncResult;

typedef struct DdlSyncContext DdlSyncContext;

/*
 * The replay of one DDL event, passed to each callback. Strings are NUL-terminated and
 * valid during the call only; copy what you keep.
 */
struct DdlSyncContext
{
	/* The event's SQL dialect, as the captured record names it (lower case). */
	const char *dialect;
	/* The database the statement ran in on the origin node ("" when not known). */
	const char *database;
	/* The search_path the statement ran with; already set for the call. */
	const char *search_path;
	/* The role the statement runs as here. */
	const char *role;
	/* Whether ddl_sync switched to that role (false: it runs as the subscription owner). */
	bool		role_switched;

	/*
	 * The adapter's own data: NULL before init_context, kept from one callback to the next
	 * until cleanup_context, which must free what it points to (or allocate it in
	 * CurrentMemoryContext, which outlives the replay of the event).
	 */
	void	   *private_data;

	/*
	 * Why a callback returned DDL_SYNC_RETRYABLE or DDL_SYNC_FATAL: set it before returning
	 * (a static string, or palloc'd); ddl_sync copies it at once. The services below set it
	 * too when they fail.
	 */
	const char *message;

	/*
	 * Services of ddl_sync, for the callbacks.
	 *
	 * execute: parses sql with this server's parser (exactly one statement) and runs it from
	 * its parse tree, after the same checks as every replayed statement: its command tag and
	 * kind must be those of the event (an adapter may rewrite the text, never turn it into
	 * another command) and CONCURRENTLY is turned off. A refused statement returns
	 * DDL_SYNC_FATAL with the reason in ctx->message, and the events row says "refused"; a
	 * statement that fails raises its ERROR through the caller.
	 *
	 * set_setting: sets a configuration parameter until the end of the transaction and
	 * remembers its previous value; ddl_sync puts every such setting back after
	 * cleanup_context, also after a failure. DDL_SYNC_FATAL (with ctx->message) when the
	 * parameter does not exist. A placeholder ("ext.name") always exists.
	 */
	DdlSyncResult (*execute) (DdlSyncContext *ctx, const char *sql);
	DdlSyncResult (*set_setting) (DdlSyncContext *ctx, const char *name, const char *value);

	/* ddl_sync's own; do not touch. */
	void	   *host;
};

/*
 * An adapter. The replay of one event is init_context -> execute_ddl -> cleanup_context;
 * cleanup_context runs even when execute_ddl failed (unless an ERROR was raised: then the
 * (sub)transaction abort undoes the settings anyway).
 */
typedef struct DdlSyncAdapter
{
	/* DDL_SYNC_ADAPTER_ABI_VERSION, as the adapter was compiled. */
	uint32		abi_version;
	/* Recorded on every events row the adapter replays (apply_adapter). */
	const char *name;
	/* The dialect it replays (compared without regard to case). */
	const char *dialect;
	/* Prepares the session; may be NULL. */
	DdlSyncResult (*init_context) (DdlSyncContext *ctx);
	/* Replays one statement (in the event's dialect); required. */
	DdlSyncResult (*execute_ddl) (DdlSyncContext *ctx, const char *sql);
	/* Undoes init_context; may be NULL. Settings made with ctx->set_setting are restored after it. */
	DdlSyncResult (*cleanup_context) (DdlSyncContext *ctx);
} DdlSyncAdapter;

/* The function ddl_sync exports, and its name for load_external_function(). */
typedef void (*DdlSyncRegisterAdapter) (const DdlSyncAdapter *adapter);
#define DDL_SYNC_REGISTER_ADAPTER_FUNCTION "ddl_sync_register_adapter"

/* Registers adapter with ddl_sync, loading $libdir/ddl_sync first if needed. */
static inline void
ddl_sync_register(const DdlSyncAdapter *adapter)
{
	DdlSyncRegisterAdapter reg;

	reg = (DdlSyncRegisterAdapter)
		load_external_function("$libdir/ddl_sync", DDL_SYNC_REGISTER_ADAPTER_FUNCTION,
							   true, NULL);
	reg(adapter);
}

#endif							/* DDL_SYNC_ADAPTER_H */
