package scope

import (
	"path/filepath"
	"strings"
)

// kind is what a command is, for the wildcards a pattern may use on it.
type kind int

const (
	// plain: wildcards match any argument.
	plain kind = iota
	// interpreter (python, perl, ruby, node, ...): a wildcard may not
	// stand for one of the interpreter's own options (an option before the
	// first argument that is not one: -c, -e, -m, --eval, ...).
	interpreter
	// shell, or a command that runs another command named in its
	// arguments (env, busybox, sudo, xargs, awk, ...): only a pattern that
	// spells out every argument allows it.
	shell
)

// shells are the base names of shells and of commands that run another
// command or program text given in their arguments.
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "pdksh": true,
	"ash": true, "csh": true, "tcsh": true, "fish": true, "rbash": true, "yash": true, "posh": true,
	"busybox": true, "toybox": true, "env": true, "sudo": true, "doas": true, "su": true,
	"runuser": true, "setpriv": true, "nice": true, "nohup": true, "setsid": true, "stdbuf": true,
	"timeout": true, "chroot": true, "xargs": true, "ionice": true, "taskset": true, "flock": true,
	"unshare": true, "nsenter": true, "script": true, "watch": true, "strace": true, "ltrace": true,
	"chrt": true, "systemd-run": true, "time": true, "find": true, "parallel": true, "ssh": true,
	"awk": true, "gawk": true, "mawk": true, "nawk": true, "expect": true, "eval": true,
	"exec": true, "command": true, "builtin": true, "cgexec": true, "firejail": true, "bwrap": true,
	"pkexec": true, "start-stop-daemon": true, "daemonize": true, "run-parts": true, "sg": true,
}

// interpreters are the base names (version suffix left out) of program
// interpreters whose options can give program text (-c, -e, ...).
var interpreters = map[string]bool{
	"python": true, "pypy": true, "perl": true, "ruby": true, "irb": true, "node": true,
	"nodejs": true, "deno": true, "bun": true, "php": true, "lua": true, "luajit": true,
	"tclsh": true, "wish": true, "rscript": true, "r": true, "pwsh": true, "powershell": true,
	"guile": true, "julia": true, "jshell": true, "java": true, "osascript": true, "gdb": true,
	"sed": true, "vim": true, "vi": true, "nvim": true, "emacs": true, "ed": true, "ex": true,
	"git": true, "make": true, "tar": true, "rsync": true, "openssl": true, "sqlite3": true,
	"psql": true, "mysql": true, "m4": true, "bc": true, "dc": true, "jq": true,
}

// kindOf is the strictest kind of the names a command goes by (the name
// it is started by and the file that runs).
func kindOf(names ...string) kind {
	k := plain
	for _, n := range names {
		base := strings.ToLower(filepath.Base(n))
		switch {
		case shells[base] || shells[stripVersion(base)]:
			return shell
		case interpreters[base] || interpreters[stripVersion(base)]:
			k = interpreter
		}
	}
	return k
}

// stripVersion drops a version suffix: python3.12 → python, lua5.4 → lua,
// php-8 → php.
func stripVersion(name string) string {
	return strings.TrimRight(name, "0123456789.-_")
}

// interpreterOption reports whether args[i] is one of the interpreter's
// own options: it starts with "-" and no earlier argument is a non-option
// (the script, after which options belong to it).
func interpreterOption(args []word, i int) bool {
	for j := 0; j < i; j++ {
		if args[j].unknown || !strings.HasPrefix(args[j].text, "-") || args[j].text == "-" {
			return false
		}
	}
	return args[i].unknown || strings.HasPrefix(args[i].text, "-")
}
