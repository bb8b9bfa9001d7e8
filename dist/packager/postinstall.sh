#!/bin/sh
# ccm-fleet postinstall (deb postinst, rpm %post): make systemd see the new
# or changed units. Nothing is enabled or started: the operator does that.
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
exit 0
