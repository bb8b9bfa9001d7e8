#!/bin/sh
# ccm-fleet postremove (deb postrm, rpm %postun): make systemd forget the
# removed units. Nothing is stopped or disabled here: a running agent or
# broker keeps running until the operator stops it.
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
exit 0
