// Package fsxtest injects crashes into fsx's write primitives: Crash is
// fsx.Sys with a hook before every step that changes the disk (embedding,
// as tailscale's atomicfile tests and reconcile's crash tests do), so that
// a test sees exactly what a crash just before that step would leave, and
// makes the step numbered FailAt fail (a Write writes half its bytes
// first, as a crash in the middle of it would).
package fsxtest

import (
	"errors"
	"fmt"

	"github.com/drift-monitor/drift-monitor/internal/fsx"
)

// ErrCrash is the error of the failed step.
var ErrCrash = errors.New("injected crash")

// Crash is fsx.Sys with a crash injected before step FailAt (0: none).
type Crash struct {
	fsx.Sys
	// Steps counts the steps so far.
	Steps  int
	FailAt int
	// Hook, if set, runs before every step.
	Hook func(step int, op string)
	// Cleanup, if set, says which removals are the cleanup a crash would
	// not do (of a temporary node after a failure): not steps of their own.
	Cleanup func(name string) bool
}

var _ fsx.FS = (*Crash)(nil)

func (f *Crash) step(op string) error {
	f.Steps++
	if f.Hook != nil {
		f.Hook(f.Steps, op)
	}
	if f.Steps == f.FailAt {
		return fmt.Errorf("%s: %w", op, ErrCrash)
	}
	return nil
}

func (f *Crash) CreateTemp(dir int, pattern string) (int, string, error) {
	if err := f.step("create temp"); err != nil {
		return -1, "", err
	}
	return f.Sys.CreateTemp(dir, pattern)
}

func (f *Crash) Write(fd int, b []byte) error {
	if err := f.step("write"); err != nil {
		f.Sys.Write(fd, b[:len(b)/2])
		return err
	}
	return f.Sys.Write(fd, b)
}

func (f *Crash) Fchown(fd, uid, gid int) error {
	if err := f.step("fchown"); err != nil {
		return err
	}
	return f.Sys.Fchown(fd, uid, gid)
}

func (f *Crash) Fchmod(fd int, mode uint32) error {
	if err := f.step("fchmod"); err != nil {
		return err
	}
	return f.Sys.Fchmod(fd, mode)
}

func (f *Crash) Fsync(fd int) error {
	if err := f.step("fsync"); err != nil {
		return err
	}
	return f.Sys.Fsync(fd)
}

func (f *Crash) MkdirTemp(dir int, pattern string) (int, string, error) {
	if err := f.step("mkdir temp"); err != nil {
		return -1, "", err
	}
	return f.Sys.MkdirTemp(dir, pattern)
}

func (f *Crash) SymlinkTemp(target string, dir int, pattern string) (string, error) {
	if err := f.step("symlink temp"); err != nil {
		return "", err
	}
	return f.Sys.SymlinkTemp(target, dir, pattern)
}

func (f *Crash) LinkTemp(olddir int, old string, dir int, pattern string) (string, error) {
	if err := f.step("link temp"); err != nil {
		return "", err
	}
	return f.Sys.LinkTemp(olddir, old, dir, pattern)
}

func (f *Crash) Lchown(dir int, name string, uid, gid int) error {
	if err := f.step("lchown"); err != nil {
		return err
	}
	return f.Sys.Lchown(dir, name, uid, gid)
}

func (f *Crash) Rename(dir int, from, to string) error {
	if err := f.step("rename"); err != nil {
		return err
	}
	return f.Sys.Rename(dir, from, to)
}

func (f *Crash) RenameNoReplace(dir int, from, to string) error {
	if err := f.step("rename noreplace"); err != nil {
		return err
	}
	return f.Sys.RenameNoReplace(dir, from, to)
}

func (f *Crash) Link(dir int, from, to string) error {
	if err := f.step("link"); err != nil {
		return err
	}
	return f.Sys.Link(dir, from, to)
}

func (f *Crash) Exchange(dir int, a, b string) error {
	if err := f.step("exchange"); err != nil {
		return err
	}
	return f.Sys.Exchange(dir, a, b)
}

func (f *Crash) Remove(dir int, name string, isDir bool) error {
	if f.Cleanup == nil || !f.Cleanup(name) {
		if err := f.step("remove"); err != nil {
			return err
		}
	}
	return f.Sys.Remove(dir, name, isDir)
}

func (f *Crash) SyncDir(dir int) error {
	if err := f.step("sync dir"); err != nil {
		return err
	}
	return f.Sys.SyncDir(dir)
}
