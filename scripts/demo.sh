#!/usr/bin/env bash
# demo.sh: the quickstart end to end on this machine. Installs the provider
# into a local filesystem mirror (make install), applies
# examples/quickstart (a 4 KB vs 2 MB huge pages A/B campaign), prints the
# summary, then destroys everything, also when the apply failed, and keeps
# only the collected report (WORKDIR/pgbench-results/<id>).
# KEEP=1 keeps the infrastructure and the work directory.
#
# Environment: TERRAFORM (default: terraform on PATH), VERSION (0.2.0),
# MIRROR (~/.terraform.d/plugins), WORKDIR (default: a new temporary
# directory), KEEP, SKIP_INSTALL=1 when the provider is installed already.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TERRAFORM=${TERRAFORM:-$(command -v terraform || true)}
VERSION=${VERSION:-0.2.0}
MIRROR=${MIRROR:-$HOME/.terraform.d/plugins}
KEEP=${KEEP:-0}
export CHECKPOINT_DISABLE=1

if [[ -z "$TERRAFORM" ]]; then
	echo "demo: terraform not found: install it or set TERRAFORM=/path/to/terraform" >&2
	exit 1
fi

start=$(date +%s)
if [[ "${SKIP_INSTALL:-0}" != 1 ]]; then
	make -C "$root" install VERSION="$VERSION" MIRROR="$MIRROR"
fi
os_arch=$(go env GOOS)_$(go env GOARCH)
plugin="$MIRROR/registry.terraform.io/pgbench-tf/pgbench/$VERSION/$os_arch/terraform-provider-pgbench_v$VERSION"
if [[ ! -x "$plugin" ]]; then
	echo "demo: provider not found at $plugin (run make install)" >&2
	exit 1
fi

work=${WORKDIR:-$(mktemp -d /tmp/pgbench-demo.XXXXXX)}
mkdir -p "$work"
cp -r "$root/examples/quickstart/." "$work/"
# Pin the exact version just installed, so that another version in the
# mirror is never picked; the override keeps the example itself free of a
# version pin.
cat >"$work/demo_override.tf" <<OVR
terraform {
  required_providers {
    pgbench = {
      source  = "pgbench-tf/pgbench"
      version = "= $VERSION"
    }
  }
}
OVR
# A CLI configuration of its own: the provider from the local mirror,
# everything else as usual.
cat >"$work/terraformrc" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$MIRROR"
    include = ["pgbench-tf/pgbench"]
  }
  direct {
    exclude = ["pgbench-tf/pgbench"]
  }
}
RC
export TF_CLI_CONFIG_FILE="$work/terraformrc"
export TF_IN_AUTOMATION=1
tf() { "$TERRAFORM" -chdir="$work" "$@"; }

# What the host had before: destroy must leave it so.
install_dir=/usr/local/lib/pgbench
had_install_dir=0
[[ -e "$install_dir" ]] && had_install_dir=1

applied=0
cleanup() {
	rc=$?
	if [[ "$applied" == 1 && "$KEEP" != 1 ]]; then
		echo "==> terraform destroy"
		if ! tf destroy -auto-approve -input=false -no-color; then
			echo "demo: destroy FAILED; the state is in $work" >&2
			rc=1
		else
			# The collected report stays; the rest of the work directory goes.
			find "$work" -mindepth 1 -maxdepth 1 ! -name pgbench-results -exec rm -rf {} +
			if [[ -d "$work/pgbench-results" ]]; then
				echo "==> the collected report is in $(echo "$work"/pgbench-results/*/)"
			else
				rmdir "$work" 2>/dev/null || true
			fi
			if [[ "$had_install_dir" == 0 && -e "$install_dir" ]]; then
				echo "demo: destroy left $install_dir behind:" >&2
				find "$install_dir" | head -20 >&2
				rc=1
			fi
		fi
	elif [[ "$KEEP" == 1 ]]; then
		echo "==> KEEP=1: kept everything; destroy with: TF_CLI_CONFIG_FILE=$work/terraformrc $TERRAFORM -chdir=$work destroy"
	fi
	echo "==> demo finished in $(($(date +%s) - start))s (exit $rc)"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "==> terraform init in $work"
tf init -input=false -no-color >/dev/null
echo "==> terraform apply (progress with TF_LOG=INFO)"
# From here on a failure still leaves things to destroy.
applied=1
tf apply -auto-approve -input=false -no-color
echo
echo "==> summary"
tf output -raw summary
echo
tf output -no-color verdicts
