/*
 * A dialect adapter in its own extension library, registered with ddl_sync from _PG_init
 * through the installed ddl_sync_adapter.h: what a third-party adapter does. Used by
 * e2e/tests/replay.rs, which compiles it and preloads it on a subscriber.
 *
 * Dialect "mysql": backquoted identifiers become double-quoted ones, and the statement runs
 * through ddl_sync (ctx->execute). A statement mentioning "ereport" is refused with an ERROR,
 * as an adapter reports a failure it finds itself.
 */
#include "postgres.h"

#include "fmgr.h"

#include "ddl_sync_adapter.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static DdlSyncResult
mysql_execute(DdlSyncContext *ctx, const char *sql)
{
	char	   *pg = pstrdup(sql);

	if (strstr(sql, "ereport") != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the mysql-c adapter refuses \"%s\"", sql)));
	for (char *p = pg; *p; p++)
		if (*p == '`')
			*p = '"';
	return ctx->execute(ctx, pg);
}

void
_PG_init(void)
{
	DdlSyncAdapter adapter = {
		.abi_version = DDL_SYNC_ADAPTER_ABI_VERSION,
		.name = "mysql-c",
		.dialect = "mysql",
		.execute_ddl = mysql_execute,
	};

	ddl_sync_register(&adapter);
}
