#!/usr/bin/env bash
# Fetches the PostgreSQL 15.18 release tarball from Debian's source packages
# (bookworm) into a cache the pgbuild tests find, and installs what building
# it needs. Idempotent: a cached tarball is not fetched again. Prints the
# tarball path on stdout.
set -euo pipefail

version=15.18
debver=15.18-0+deb12u1
cache=/var/cache/pgbench-test/src
tarball=$cache/postgresql-15_${version}.orig.tar.bz2
sources=/etc/apt/sources.list.d/pgbench-src.sources

export DEBIAN_FRONTEND=noninteractive

if [ ! -f "$sources" ]; then
	cat >"$sources" <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi

apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends \
	dpkg-dev gcc make flex bison patch bzip2 zlib1g-dev libnuma-dev pkg-config \
	libreadline-dev libicu-dev git >&2

if [ ! -f "$tarball" ]; then
	mkdir -p "$cache"
	(cd "$cache" && apt-get source --download-only "postgresql-15=$debver") >&2
fi
if [ ! -f "$tarball" ]; then
	echo "fetch-postgres-source: $tarball missing after apt-get source" >&2
	exit 1
fi
echo "$tarball"
