#!/bin/sh
# Build Apache Mesos 1.11 into /opt/mesos (run inside deploy/mesos/Dockerfile's builder stage).
# The source: /build/mesos-source.tar.gz, from the Dockerfile's source stage (deploy/mesos/fetch-source.sh).
set -eu
src=/build/mesos-source.tar.gz
mkdir -p /build/src /build/out
tar -C /build/src --strip-components=1 -xzf "$src"
cd /build/src
for p in /build/patches/*.patch; do
  echo "patch: $(basename "$p"): $(head -n 1 "$p")"
  patch -p1 < "$p"
done
./bootstrap
cd /build/out
../src/configure --prefix=/opt/mesos --disable-java --disable-python --disable-werror \
  --with-protobuf=/usr --with-grpc=/usr --with-zookeeper=/usr --with-libarchive=/usr \
  CFLAGS="$MESOS_OPT_FLAGS" CXXFLAGS="$MESOS_OPT_FLAGS"
make -j"$MAKE_JOBS"
make install
# the runtime stage needs the daemons, the executors and the shared libraries only
rm -rf /opt/mesos/include /opt/mesos/lib/*.a /opt/mesos/lib/*.la /opt/mesos/lib/mesos/3rdparty /opt/mesos/etc/mesos/*.template
find /opt/mesos -type f -exec sh -c 'for f; do strip --strip-unneeded "$f" 2>/dev/null || true; done' sh {} +
