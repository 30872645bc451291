#!/usr/bin/env bash
# Installs everything peakhour needs on Debian 12, then builds it.
#
#   ./scripts/setup.sh                  # packages + debug build
#   ./scripts/setup.sh --release        # packages + release build (what the demo uses)
#   ./scripts/setup.sh --packages-only  # only the servers and tools the lab and the
#                                       # tests run (also --no-build): no cargo needed
#   ./scripts/setup.sh --recording      # also the real mail clients that
#                                       # scripts/record-clients.sh records (docs/clients.md)
#
# Safe to repeat: packages already installed are left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; }
profile=debug
build=1
recording=0
for arg in "$@"; do
  case "$arg" in
    --release) profile=release ;;
    --packages-only|--no-build) build=0 ;;
    --recording) recording=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown option $arg" >&2; usage >&2; exit 2 ;;
  esac
done

# Servers the lab runs, and the tools it runs them with.
PACKAGES=(dovecot-imapd dovecot-lmtpd dovecot-pop3d postfix openssl util-linux python3 ca-certificates chromium
  prometheus-node-exporter   # the monitor's remote source is tested against it
  openjdk-17-jre-headless maven  # HdrHistogram's own Java log tools read a run's latency.hlog in tests
  man-db         # `man -l -` renders `peakhour man` in tests
  dbench                         # its NBENCH load file, /usr/share/dbench/client.txt, for trace replay and tests
  samba smbclient                # the SMB backend's live tests start a private smbd; smbclient checks what it wrote
  radicale                       # the CalDAV server peakhour-caldav's live test runs against
  prometheus python3-prometheus-client  # scrape `run --metrics-listen` in tests; Python's strict OpenMetrics parser
  cyrus-common cyrus-caldav      # `lab up --mail-server cyrus`: Cyrus's master, lmtpd and httpd (JMAP)
  db-util libsasl2-modules-db    # db_load writes the Cyrus lab's SASL users; sasldb checks them
  podman buildah runc catatonit debootstrap)  # the container image, built here with no registry (scripts/build-image.sh)

# Real mail clients, only with --recording: scripts/record-clients.sh drives
# them against a lab to record what they send (issue 28); the test suite does
# not need them. roundcube's database is configured by the recording script
# itself, so dbconfig is told to leave it alone.
RECORDING_PACKAGES=(thunderbird isync neomutt tmux roundcube-core roundcube-sqlite3 php-cli php-sqlite3 chromium-driver)
if [ "$recording" = 1 ]; then
  PACKAGES+=("${RECORDING_PACKAGES[@]}")
fi

say() { printf '==> %s\n' "$*"; }

if [ "$(id -u)" -ne 0 ]; then
  echo "error: run as root (the lab starts Postfix and Dovecot, which need root to switch users)" >&2
  exit 1
fi

missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # Postfix asks how to configure the system mailer; the lab brings its own configuration.
  echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections
  echo "roundcube-core roundcube/dbconfig-install boolean false" | debconf-set-selections
  # Keep the packages' system-wide services from starting: the lab runs its
  # own private instances, and a system Postfix on port 25 is not wanted here.
  # The guard is removed again unless it was there before.
  guard=/usr/sbin/policy-rc.d
  placed_guard=0
  if [ ! -e "$guard" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$guard"
    chmod +x "$guard"
    placed_guard=1
  fi
  trap '[ "$placed_guard" = 1 ] && rm -f "$guard"' EXIT
  apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  say "system packages already installed"
fi

# Debian's prometheus package enables a system-wide Prometheus on port 9090.
# The tests start their own on free loopback ports; the system one is not
# wanted (the guard above kept it from starting, this keeps it from booting).
if [ -d /run/systemd/system ] && systemctl is-enabled --quiet prometheus.service 2>/dev/null; then
  say "disabling the system-wide prometheus service"
  systemctl disable --now prometheus.service
fi

# The official Kubernetes client's models check `peakhour k8s job`'s
# manifests (crates/cli/tests/k8s_job.rs, scripts/validate-k8s.py).
if ! python3 -c 'import kubernetes' >/dev/null 2>&1; then
  say "installing the Kubernetes Python client (pip)"
  python3 -m pip install -q kubernetes 2>/dev/null \
    || python3 -m pip install -q --break-system-packages kubernetes
else
  say "Kubernetes Python client already installed"
fi

# The manifest checkers of `peakhour k8s job` (crates/cli/tests/k8s_job.rs):
# kube-score and kubeconform from the Go module proxy, and the Kubernetes
# API's JSON schemas from PyPI's kubernetes-validate, for kubeconform offline.
if ! python3 -c 'import kubernetes_validate' >/dev/null 2>&1; then
  say "installing kubernetes-validate's schemas (pip)"
  python3 -m pip install -q kubernetes-validate 2>/dev/null \
    || python3 -m pip install -q --break-system-packages kubernetes-validate
fi
go=$(command -v go || echo /usr/local/go/bin/go)
for tool in github.com/yannh/kubeconform/cmd/kubeconform@v0.8.0 github.com/zegl/kube-score/cmd/kube-score@v1.20.0; do
  name=${tool##*/}; name=${name%@*}
  if [ ! -x "$HOME/go/bin/$name" ] && ! command -v "$name" >/dev/null; then
    if [ -x "$go" ]; then
      say "installing $name (go install)"
      "$go" install "$tool"
    else
      echo "warning: no Go toolchain: $name not installed; the k8s_job tests will fail" >&2
    fi
  fi
done

# The recording drivers: Thunderbird over Marionette, Chromium (Roundcube) over WebDriver.
if [ "$recording" = 1 ] && ! python3 -c 'import marionette_driver, selenium' >/dev/null 2>&1; then
  say "installing marionette-driver and selenium (pip)"
  python3 -m pip install -q marionette-driver selenium 2>/dev/null \
    || python3 -m pip install -q --break-system-packages marionette-driver selenium
fi

# Cyrus's imapd and pop3d come in cyrus-imapd and cyrus-pop3d, which conflict
# with Dovecot's packages (imap-server, pop3-server): unpack them privately,
# where the Cyrus lab looks for them, instead of installing them.
CYRUS_PRIVATE=/opt/peakhour/cyrus
if [ ! -x "$CYRUS_PRIVATE/usr/lib/cyrus/bin/imapd" ] || [ ! -x "$CYRUS_PRIVATE/usr/lib/cyrus/bin/pop3d" ]; then
  say "unpacking cyrus-imapd and cyrus-pop3d into $CYRUS_PRIVATE"
  debs=$(mktemp -d)
  chmod 755 "$debs"   # apt's download user must write here
  (cd "$debs" && apt-get download -q cyrus-imapd cyrus-pop3d)
  mkdir -p "$CYRUS_PRIVATE"
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$CYRUS_PRIVATE"; done
  rm -rf "$debs"
fi

if [ "$build" = 0 ]; then
  say "packages installed; not building (--packages-only)"
  exit 0
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "error: cargo not found; install Rust 1.95 or newer (https://rustup.rs)" >&2
  exit 1
fi

say "building peakhour ($profile)"
if [ "$profile" = release ]; then
  cargo build --release --locked -p peakhour
else
  cargo build --locked -p peakhour
fi
say "peakhour is at target/$profile/peakhour"
