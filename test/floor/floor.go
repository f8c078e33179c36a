// Package floor makes the system calls a full check makes, and nothing
// else: the floors drift-bench and the Go benchmarks time a check against.
// It is the check's own shape (internal/ondisk): each directory opened
// once, every call relative to it, directories shared among workers.
//
// Per file: the node's attributes without following it (fstatat; statx
// with Meta), the open without following it, a read of its size and one
// byte more (which tells its end), close; with Meta also flistxattr and
// fgetxattr of each name listed, as a check reads every xattr a node has
// (the internal/check package doc: every content read, every node's
// metadata observed).
package floor

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// Run does it for the files of each directory of byDir (a directory's
// path to the names of its regular files) with workers goroutines, and
// returns the first error.
func Run(byDir map[string][]string, workers int, meta bool) error {
	dirs := make(chan string, len(byDir))
	for d := range byDir {
		dirs <- d
	}
	close(dirs)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 128<<10)
			for d := range dirs {
				if err := dir(d, byDir[d], meta, buf); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func dir(path string, files []string, meta bool, buf []byte) error {
	dfd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	var names, value [4096]byte
	for _, name := range files {
		if err := file(dfd, name, meta, buf, names[:], value[:]); err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(path, name), err)
		}
	}
	return nil
}

func file(dfd int, name string, meta bool, buf, names, value []byte) error {
	var size int64
	if meta {
		var sx unix.Statx_t
		if err := unix.Statx(dfd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS, &sx); err != nil {
			return err
		}
		size = int64(sx.Size)
	} else {
		var st unix.Stat_t
		if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		size = st.Size
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for want := size + 1; want > 0; {
		n, err := unix.Read(fd, buf[:min(want, int64(len(buf)))])
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		want -= int64(n)
	}
	if !meta {
		return nil
	}
	n, err := unix.Flistxattr(fd, names)
	if err != nil {
		return err
	}
	for _, x := range bytes.Split(names[:n], []byte{0}) {
		if len(x) == 0 {
			continue
		}
		if _, err := unix.Fgetxattr(fd, string(x), value); err != nil {
			return err
		}
	}
	return nil
}
