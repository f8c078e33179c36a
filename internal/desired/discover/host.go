package discover

import (
	"io/fs"
	"os"

	"github.com/drift-monitor/drift-monitor/internal/writers"
)

// Host is a root's host paths as the loader reads them (the config
// directories, the account databases): each path resolved inside the root,
// links followed only as if the root were /, so that an absolute link never
// leads to the running host's file. *ondisk.Root is the implementation;
// the interface is declared here, by its consumer, so that loading a
// config from a tree needs nothing of ondisk but these methods.
type Host interface {
	// Dir is the directory the root was opened from.
	Dir() string
	// Open opens a regular file for reading; the error is an *fs.PathError.
	Open(hostPath string) (*os.File, error)
	// ReadFile reads a regular file whole.
	ReadFile(hostPath string) ([]byte, error)
	// ReadDir lists a directory, its links not followed.
	ReadDir(hostDir string) ([]fs.DirEntry, error)
	// Root names a host path inside the root (Join), and walks its
	// resolution for the check of who could have written a config.
	writers.Root
}
