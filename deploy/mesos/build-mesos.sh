#!/bin/sh
# Build Apache Mesos 1.11 into /opt/mesos (run inside deploy/mesos/Dockerfile's builder stage).
# The source: /build/mesos-source.tar.gz when the build context has one, else MESOS_SOURCE_URL.
set -eu
cd /build
if [ -f mesos-source.tar.gz ]; then
  echo "mesos source: the tarball in the build context"
  src=/build/mesos-source.tar.gz
else
  echo "mesos source: $MESOS_SOURCE_URL"
  curl -fsSL --retry 3 "$MESOS_SOURCE_URL" -o /build/mesos-download.tar.gz
  src=/build/mesos-download.tar.gz
fi
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
