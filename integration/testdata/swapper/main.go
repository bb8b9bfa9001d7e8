// Command swapper is the local attacker of the adversarial suite's
// directory-swap spec. Run as an unprivileged user, it makes DIR/d (a real
// directory) and DIR/d.swap (a symbolic link to GOAL), prints "ready", then
// exchanges the two names with renameat2(RENAME_EXCHANGE) until it has
// run for DURATION or made MAX exchanges, and prints how many it made.
//
//	swapper DIR GOAL DURATION MAX
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	n, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "swapper:", err)
		os.Exit(2)
	}
	fmt.Println(n)
}

func run(args []string) (int, error) {
	if len(args) != 4 {
		return 0, errors.New("usage: swapper DIR GOAL DURATION MAX")
	}
	dir, goal := args[0], args[1]
	d, err := time.ParseDuration(args[2])
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", args[2], err)
	}
	limit, err := strconv.Atoi(args[3])
	if err != nil {
		return 0, fmt.Errorf("max %q: %w", args[3], err)
	}
	syscall.Umask(0)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return 0, err
	}
	name, swap := filepath.Join(dir, "d"), filepath.Join(dir, "d.swap")
	if err := os.Mkdir(name, 0o777); err != nil {
		return 0, err
	}
	if err := os.Symlink(goal, swap); err != nil {
		return 0, err
	}
	fmt.Println("ready")
	deadline := time.Now().Add(d)
	n := 0
	for n < limit {
		if n%1024 == 0 && time.Now().After(deadline) {
			break
		}
		if err := unix.Renameat2(unix.AT_FDCWD, name, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE); err != nil {
			return n, fmt.Errorf("exchange %d: %w", n, err)
		}
		n++
	}
	return n, nil
}
