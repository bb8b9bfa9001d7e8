// Package shadow holds the providers of the user and group types built on
// the shadow suite's tools: useradd (useradd, usermod, userdel, chpasswd
// -e) and groupadd (groupadd, groupmod, groupdel, gpasswd -M). Accounts
// are read as the system reads them, through getent (passwd, shadow,
// group, initgroups), so NSS sources count; changes go through the tools,
// which write only the local files (/etc/passwd, /etc/shadow, /etc/group,
// /etc/gshadow). Every tool runs with an argv, never a shell, in a fixed
// search path; a password hash goes to chpasswd on its standard input,
// never in an argv or a log.
package shadow
