#!/bin/sh
# Installs this package: copies root/ onto / (or onto $DESTDIR, e.g. an image being built or a
# private copy of the PostgreSQL tree). Run it as the owner of the PostgreSQL directories
# (root). See INSTALL.
#
# Each file is written under a temporary name next to its destination and then renamed over
# it: a running server that has the old library mapped keeps its copy, and no backend ever
# loads a half-written file.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=${DESTDIR:-}
cd "$here/root"
find . -type d | while IFS= read -r dir; do
    mkdir -p "$dest/${dir#./}"
done
find . -type f | while IFS= read -r file; do
    target="$dest/${file#./}"
    cp "$file" "$target.ddl_sync-new"
    chmod "$(stat -c %a "$file")" "$target.ddl_sync-new"
    mv -f "$target.ddl_sync-new" "$target"
    echo "installed $target"
done

# A server updated since August 2026 (15.19, 16.15, 17.11, 18.6 and later) decodes only with the
# output plugins that output_plugin_libraries lists; older ones lack the parameter and would not
# start with it set, so say it only where the installed server has it.
postgres=$(find . -type f -name ddl-dump | sed 's|^\.||; s|/ddl-dump$|/postgres|' | head -n 1)
if [ -n "$postgres" ] && [ -x "$dest$postgres" ] &&
    "$dest$postgres" --describe-config 2>/dev/null | grep -q '^output_plugin_libraries'; then
    echo
    echo "This server has output_plugin_libraries: on a publisher, list ddl_pgoutput in it"
    echo "(postgresql.conf, then reload), keeping the plugins already listed:"
    echo "    output_plugin_libraries = 'pgoutput, test_decoding, ddl_pgoutput'"
fi
