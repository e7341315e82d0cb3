//! The `role rights` field of a record: what the statement's role could do where it ran.
//!
//! A role is matched across nodes by name, but its rights are each node's own: a role that may
//! create roles on the publisher can make one named like a role that is a superuser only on a
//! subscriber, and a statement replayed there in that name would run as that superuser. So the
//! capture writes what its role could do, the subscriber describes the role of that name the
//! same way, and refuses to replay as a role that may do more.
//!
//! The text is space-separated: the five role attributes a statement can use, each as `CREATE
//! ROLE` spells it (`SUPERUSER` or `NOSUPERUSER`, then `CREATEDB`, `CREATEROLE`, `REPLICATION`,
//! `BYPASSRLS`, each with or without `NO`), then the predefined roles (`pg_read_server_files`,
//! ...) whose privileges the role has, in name order. A superuser is written as `SUPERUSER`
//! alone: it has every right.

/// The attributes, in the order they are written.
pub const ROLE_ATTRIBUTES: [&str; 5] = [
    "SUPERUSER",
    "CREATEDB",
    "CREATEROLE",
    "REPLICATION",
    "BYPASSRLS",
];

/// A role's rights: `attributes` says which of [`ROLE_ATTRIBUTES`] it has (superuser first),
/// `predefined` the predefined roles whose privileges it has.
pub fn describe_role_rights(attributes: [bool; 5], predefined: &[&str]) -> String {
    if attributes[0] {
        return ROLE_ATTRIBUTES[0].to_string();
    }
    let mut words: Vec<String> = ROLE_ATTRIBUTES
        .iter()
        .zip(attributes)
        .map(|(name, has)| {
            if has {
                name.to_string()
            } else {
                format!("NO{name}")
            }
        })
        .collect();
    let mut predefined: Vec<&str> = predefined.to_vec();
    predefined.sort_unstable();
    predefined.dedup();
    words.extend(predefined.into_iter().map(str::to_string));
    words.join(" ")
}

/// Whether `rights` (as [`describe_role_rights`] writes them) are a superuser's: every right,
/// so no role can have rights beyond them.
pub fn has_every_right(rights: &str) -> bool {
    rights
        .split_whitespace()
        .any(|right| right == ROLE_ATTRIBUTES[0])
}

/// The rights `here` has that `there` lacks (both as [`describe_role_rights`] writes them):
/// none when `there` is a superuser's.
pub fn rights_beyond<'a>(here: &'a str, there: &str) -> Vec<&'a str> {
    if has_every_right(there) {
        return Vec::new();
    }
    let theirs: Vec<&str> = there.split_whitespace().collect();
    here.split_whitespace()
        .filter(|right| !right.starts_with("NO") && !theirs.contains(right))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rights_are_described_the_same_way_on_every_node() {
        assert_eq!(
            describe_role_rights([true, true, false, false, false], &["pg_monitor"]),
            "SUPERUSER"
        );
        assert_eq!(
            describe_role_rights([false, false, true, false, false], &["pg_write_server_files", "pg_monitor"]),
            "NOSUPERUSER NOCREATEDB CREATEROLE NOREPLICATION NOBYPASSRLS pg_monitor pg_write_server_files"
        );
    }

    #[test]
    fn only_rights_beyond_the_publishers_count() {
        let ordinary = describe_role_rights([false; 5], &[]);
        let superuser = describe_role_rights([true, false, false, false, false], &[]);
        let files = describe_role_rights([false; 5], &["pg_read_server_files"]);
        assert_eq!(rights_beyond(&superuser, &ordinary), ["SUPERUSER"]);
        assert_eq!(rights_beyond(&files, &ordinary), ["pg_read_server_files"]);
        assert!(rights_beyond(&ordinary, &files).is_empty());
        assert!(rights_beyond(&superuser, &superuser).is_empty());
        assert!(rights_beyond(&files, &superuser).is_empty());
        let bypass = describe_role_rights([false, false, false, false, true], &[]);
        assert_eq!(rights_beyond(&bypass, &ordinary), ["BYPASSRLS"]);
    }
}
