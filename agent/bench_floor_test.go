package agent_test

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkRequestSyscallFloor is the least a signed noop file request
// costs an agent in system calls, whatever the code around them: the three
// lines it must make durable before it answers (the replay journal's
// received and answered lines and the audit line, each one write to its
// file opened for appending) and the file's status (the parent directory
// opened, the file's lstat, the file opened, read and hashed, both closed).
// It is the part of the agent's CPU per request that no change to the
// agent's own code can remove while it keeps those records and reads the
// file it reports on; BENCHMARKS.md compares it with the measured CPU.
func BenchmarkRequestSyscallFloor(b *testing.B) {
	dir := b.TempDir()
	open := func(name string) *os.File {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = f.Close() })
		return f
	}
	received, answered, audit := open("received.jsonl"), open("answered.jsonl"), open("audit.jsonl")
	line := make([]byte, 240)
	for i := range line {
		line[i] = 'x'
	}
	line[len(line)-1] = '\n'
	parent := filepath.Join(dir, "etc", "app")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, "motd"), []byte("managed by the bench\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 4096)

	b.Run("journal_and_audit_writes", func(b *testing.B) {
		for b.Loop() {
			for _, f := range []*os.File{received, answered, audit} {
				if _, err := f.Write(line); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("file_status", func(b *testing.B) {
		for b.Loop() {
			dfd, err := unix.Open(parent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				b.Fatal(err)
			}
			var st unix.Stat_t
			if err := unix.Fstatat(dfd, "motd", &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				b.Fatal(err)
			}
			fd, err := unix.Openat(dfd, "motd", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				b.Fatal(err)
			}
			n, err := unix.Read(fd, buf)
			if err != nil {
				b.Fatal(err)
			}
			_ = sha256.Sum256(buf[:n])
			_ = unix.Close(fd)
			_ = unix.Close(dfd)
		}
	})
}
