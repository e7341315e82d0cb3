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
