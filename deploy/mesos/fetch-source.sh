#!/bin/sh
# The Mesos source tarball for deploy/mesos/Dockerfile's builder, into /build/src/mesos-source.tar.gz:
# the build context's deploy/mesos/mesos-source.tar.gz when there is one, else MESOS_SOURCE_URL.
set -eu
mkdir -p /build/src
if [ -f /build/mesos-source.tar.gz ]; then
  echo "mesos source: the tarball in the build context"
  mv /build/mesos-source.tar.gz /build/src/mesos-source.tar.gz
else
  echo "mesos source: $MESOS_SOURCE_URL"
  curl -fsSL --retry 3 "$MESOS_SOURCE_URL" -o /build/src/mesos-source.tar.gz
fi
