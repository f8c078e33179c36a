package image

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/osstate"
)

// The rpm header's file flags and verify flags, and its file states, as
// rpm numbers them (rpm-software-management/rpm include/rpm/rpmfiles.h:
// rpmfileAttrs_e, rpmVerifyAttrs_e, rpmfileState_e).
const (
	fileMissingOK = 1 << 3
	fileGhost     = 1 << 6

	verifyDigest = 1 << 0
	verifySize   = 1 << 1
	verifyLinkTo = 1 << 2
	verifyUser   = 1 << 3
	verifyGroup  = 1 << 4
	verifyMtime  = 1 << 5
	verifyMode   = 1 << 6
	verifyRdev   = 1 << 7
	verifyCaps   = 1 << 8

	stateNormal       = 0
	stateReplaced     = 1
	stateNotInstalled = 2
	stateNetShared    = 3
	stateWrongColor   = 4
)

// rpmQueryFormat reads what rpm -V compares each file of every installed
// package with: the headers only, no file is touched. Per package, a line
// of its name and digest algorithm, then a line per file, its path first
// (absolute: a package's line never starts with "/"). Fields are separated
// by tabs, which rpmbuild refuses in file names (build/files.c: "Illegal
// character (0x9) in filename"). What is the package's is said once, not
// per file: rpm formats every value of every file of every package, and
// the query's cost is that formatting. LONGFILESIZES is rpm's own
// extension (lib/tagexts.c, longfilesizesTag): the 64-bit sizes where a
// package has them, else FILESIZES.
const rpmQueryFormat = `%{NAME}\t%{FILEDIGESTALGO}\n[%{FILENAMES}\t%{FILEDIGESTS}\t%{FILEMODES}\t%{FILEUSERNAME}\t%{FILEGROUPNAME}\t%{FILEFLAGS}\t%{FILEVERIFYFLAGS}\t%{FILELINKTOS}\t%{FILESTATES}\t%{LONGFILESIZES}\t%{FILERDEVS}\t%{FILECAPS}\n]`

// The fields of rpmQueryFormat's lines.
const (
	rpmPackageFields = 2
	rpmFileFields    = 12
)

// rpmFile is one package's record of a file.
type rpmFile struct {
	pkg         string
	algo        int
	digest      string
	mode        uint32 // the whole st_mode
	user, group string
	flags       uint32
	verify      uint32
	linkTo      string
	state       int
	size        int64
	rdev        uint64
	caps        string
}

// RPM is the baseline of a host managed with rpm: what the rpm database
// says of every packaged file under /etc, verified as `rpm -V` verifies
// it (rpm lib/verify.cc, rpmfilesVerify and verifyHeader):
//
//   - files in state "not installed" or "net shared" are not verified; a
//     "replaced" file only for being there; a "wrong color" file not for
//     its content, size or device;
//   - a %ghost file is not verified for its content, size or link target,
//     nor its mode's type; a missing %ghost or %config(missingok) file is
//     no difference;
//   - a file's own %verify(not …) flags leave out what they name;
//   - a link is not verified for its mode, anything else not for a link
//     target, and only a regular file for its content, size and
//     capabilities;
//   - the mode is the whole st_mode, and a POSIX ACL beyond the mode
//     counts as a mode difference; a user or group that does not resolve
//     in the root's account files is root, and the set-id bit it carries
//     is then not expected;
//   - files that no package owns are never differences.
//
// The modification time is not compared (DESIGN: times are never drift):
// the oracle is `rpm -Va --nomtime`. Neither is an SELinux label (rpm -V
// compares none).
type RPM struct {
	// Files are the packaged paths under /etc, each with every package's
	// record of it; Paths lists them sorted.
	Files map[string][]rpmFile
	Paths []string
}

// QueryRPM reads the rpm database of r at dbdir (a host path) with the
// rpm program, read-only (`rpm -qa --qf`), keeping the files under /etc.
func QueryRPM(ctx context.Context, r *ondisk.Root, dbdir string) (*RPM, error) {
	return queryRPM(ctx, r, dbdir, nil)
}

// queryRPM is QueryRPM, handing every record to ahead (if not nil) as it
// is read.
func queryRPM(ctx context.Context, r *ondisk.Root, dbdir string, ahead *verifyAhead) (*RPM, error) {
	prog, err := exec.LookPath("rpm")
	if err != nil {
		return nil, osstate.ErrNoRPM
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, "--root", r.Dir(), "--dbpath", dbdir, "-qa", "--qf", rpmQueryFormat)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// Killed, rpm leaves its output's pipes to whatever it started: they
	// are not waited for long.
	cmd.WaitDelay = rpmIdleCheck
	out, w, err := batchPipe(ctx)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		return nil, fmt.Errorf("running rpm: %w", err)
	}
	b, perr := parseRPMQuery(out, ahead)
	if perr != nil {
		io.Copy(io.Discard, out)
	}
	werr := cmd.Wait()
	if werr != nil {
		return nil, fmt.Errorf("rpm --root %s --dbpath %s -qa: %v: %s", r.Dir(), dbdir, werr, strings.TrimSpace(stderr.String()))
	}
	if perr != nil {
		return nil, fmt.Errorf("rpm --root %s --dbpath %s -qa: %w", r.Dir(), dbdir, perr)
	}
	return b, nil
}

// rpmBatch is how long the query's reader lets rpm fill the pipe before it
// reads again. rpm writes its output a package at a time (lib/query.c
// hands each package's text to rpmlog, which flushes it), a few kilobytes
// per write, and a reader that waits in the pipe for each of them is
// woken, on the other core, for every one: a wake-up the writer pays,
// which costs more than formatting the package. A reader that sleeps
// between batches is not waiting in the pipe, and rpm's writes wake
// nobody.
const rpmBatch = time.Millisecond

// rpmPipeSize is the pipe's capacity asked for (F_SETPIPE_SZ): more than
// rpm writes in rpmBatch, so that it does not wait for the reader. Where
// it is refused (over the kernel's pipe-max-size, or a user's pipe quota)
// the pipe keeps its default size, and the batches are smaller.
const rpmPipeSize = 1 << 20

// rpmIdleCheck is how often a reader waiting for a stalled rpm looks at
// its context: killing rpm ends the pipe only if no process rpm started
// still holds it.
const rpmIdleCheck = time.Second

// batchPipe is a pipe for rpm's output: the write end is the child's own
// standard output (exec passes an *os.File as it is), the read end a
// batchReader that gives up when ctx ends.
func batchPipe(ctx context.Context) (*batchReader, *os.File, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("a pipe for rpm: %w", err)
	}
	_, _ = unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, rpmPipeSize)
	// The read end alone is non-blocking: the two ends are two open files.
	if err := unix.SetNonblock(p[0], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, fmt.Errorf("a pipe for rpm: %w", err)
	}
	return &batchReader{ctx: ctx, fd: p[0]}, os.NewFile(uintptr(p[1]), "rpm query"), nil
}

// batchReader reads a pipe a child is filling: what is there, then, when
// it is empty, again after rpmBatch; only when that finds it empty too does
// it wait in poll(2) for the next write, so that a child that stalls (rpm
// waiting for its database's lock) costs no reads.
type batchReader struct {
	ctx    context.Context
	fd     int
	waited bool // the pipe was found empty an interval ago: wait in poll(2)
	// empty counts the reads that found the pipe empty; polling is set
	// while the reader waits in poll(2). Tests read them.
	empty   atomic.Int64
	polling atomic.Bool
}

func (b *batchReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(b.fd, p)
		switch {
		case err == nil && n == 0:
			return 0, io.EOF
		case err == nil:
			b.waited = false
			return n, nil
		case err == unix.EINTR:
			continue
		case err != unix.EAGAIN:
			return 0, err
		}
		b.empty.Add(1)
		if !b.waited {
			b.waited = true
			time.Sleep(rpmBatch)
			continue
		}
		if err := b.wait(); err != nil {
			return 0, err
		}
	}
}

// wait waits in poll(2) until the pipe has something to read or is
// closed, or the reader's context ends.
func (b *batchReader) wait() error {
	b.polling.Store(true)
	defer b.polling.Store(false)
	fds := []unix.PollFd{{Fd: int32(b.fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(rpmIdleCheck/time.Millisecond))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return err
		case n > 0:
			return nil
		}
		if err := b.ctx.Err(); err != nil {
			return err
		}
	}
}

func (b *batchReader) Close() error { return unix.Close(b.fd) }

// parseRPMQuery reads rpmQueryFormat's lines, keeping the files of /etc,
// each handed to ahead (if not nil) as read. Every other file's line is
// skipped as read, without a copy: most of a host's files are elsewhere.
func parseRPMQuery(rd io.Reader, ahead *verifyAhead) (*RPM, error) {
	b := &RPM{Files: map[string][]rpmFile{}}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var pkg rpmPackage
	havePkg := false
	// skipping: the last line was of a file outside /etc, whose path or
	// link target may hold a new line (build/files.c's validFilename
	// refuses control bytes in file names, not in link targets, and a
	// package built before it checked names may hold one there too): a
	// line after it that is not a package's, of rpmPackageFields fields,
	// is the rest of that record.
	skipping := false
	prefix := []byte(EtcDir + "/")
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		switch {
		case len(line) > 0 && line[0] != '/':
			if skipping && bytes.Count(line, []byte("\t"))+1 != rpmPackageFields {
				continue
			}
			p, err := parseRPMPackage(line)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			pkg, havePkg, skipping = p, true, false
		case !bytes.HasPrefix(line, prefix):
			skipping = true
			continue
		case !havePkg:
			return nil, fmt.Errorf("line %d: a file before any package", n)
		default:
			skipping = false
			p, f, err := parseRPMFile(string(line), pkg)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			b.Files[p] = append(b.Files[p], f)
			if ahead != nil {
				ahead.add(p, f)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for p := range b.Files {
		b.Paths = append(b.Paths, p)
	}
	sort.Strings(b.Paths)
	return b, nil
}

// rpmPackage is what a package's line says of all its files.
type rpmPackage struct {
	name string
	algo int
}

func parseRPMPackage(line []byte) (rpmPackage, error) {
	name, algo, ok := bytes.Cut(line, []byte("\t"))
	if !ok || bytes.IndexByte(algo, '\t') >= 0 {
		return rpmPackage{}, fmt.Errorf("a package's line of %d fields, want %d", bytes.Count(line, []byte("\t"))+1, rpmPackageFields)
	}
	p := rpmPackage{name: string(name), algo: 1} // PGPHASHALGO_MD5: a header without FILEDIGESTALGO
	if string(algo) != "(none)" {
		a, err := strconv.ParseUint(string(algo), 10, 8)
		if err != nil {
			return rpmPackage{}, fmt.Errorf("package %s: digest algorithm: %w", p.name, err)
		}
		p.algo = int(a)
	}
	return p, nil
}

func parseRPMFile(line string, pkg rpmPackage) (string, rpmFile, error) {
	var fs [rpmFileFields]string
	n := 0
	for rest := line; ; n++ {
		field, more, ok := strings.Cut(rest, "\t")
		if n < len(fs) {
			fs[n] = field
		}
		if !ok {
			break
		}
		rest = more
	}
	if n+1 != rpmFileFields {
		return "", rpmFile{}, fmt.Errorf("%d fields, want %d", n+1, rpmFileFields)
	}
	f := rpmFile{pkg: pkg.name, algo: pkg.algo}
	var errs []error
	num := func(s string, bits int) uint64 {
		v, err := strconv.ParseUint(s, 10, bits)
		errs = append(errs, err)
		return v
	}
	f.digest = strings.ToLower(fs[1])
	f.mode = uint32(num(fs[2], 32))
	f.user, f.group = fs[3], fs[4]
	f.flags = uint32(num(fs[5], 32))
	f.verify = uint32(num(fs[6], 32))
	f.linkTo = fs[7]
	state, err := strconv.Atoi(fs[8])
	errs = append(errs, err)
	f.state = state
	f.size = int64(num(fs[9], 63))
	f.rdev = num(fs[10], 64)
	if fs[11] != "(none)" {
		f.caps = fs[11]
	}
	if err := errors.Join(errs...); err != nil {
		return "", rpmFile{}, fmt.Errorf("%s: %w", fs[0], err)
	}
	return path.Clean(fs[0]), f, nil
}

// verifier verifies files inside a root, with the root's accounts.
type verifier struct {
	root *ondisk.Root
	db   *accountdb.DB
	buf  []byte
	// dir is the directory dirFD holds (or dirErr says why it could not
	// be opened): the paths come sorted, a directory's files side by
	// side, and each directory is opened once for all of them.
	dir    string
	dirFD  int
	dirErr error
	// xattrs is the scratch of xattrReader's listings.
	xattrs []byte
}

func newVerifier(r *ondisk.Root, db *accountdb.DB) *verifier {
	return &verifier{root: r, db: db, dirFD: -1}
}

// close closes the directory held.
func (v *verifier) close() {
	if v.dirFD >= 0 {
		unix.Close(v.dirFD)
	}
	v.dir, v.dirFD, v.dirErr = "", -1, nil
}

// Verify verifies every packaged path under /etc.
func (b *RPM) Verify(ctx context.Context, r *ondisk.Root) ([]Change, error) {
	return b.verifyPaths(ctx, r, b.Paths)
}

// VerifyAt verifies the packaged paths at host path p or under it (what
// a change at p can have affected).
func (b *RPM) VerifyAt(ctx context.Context, r *ondisk.Root, p string) ([]Change, error) {
	i := sort.SearchStrings(b.Paths, p)
	j := i
	for j < len(b.Paths) && (b.Paths[j] == p || strings.HasPrefix(b.Paths[j], p+"/") || p == "/") {
		j++
	}
	return b.verifyPaths(ctx, r, b.Paths[i:j])
}

func (b *RPM) verifyPaths(ctx context.Context, r *ondisk.Root, paths []string) ([]Change, error) {
	db, err := accountdb.Read(r)
	if err != nil {
		return nil, err
	}
	v := newVerifier(r, db)
	defer v.close()
	var out []Change
	var res []verifyResult
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fs := b.Files[p]
		res = res[:0]
		for i := range fs {
			res = append(res, v.file(p, &fs[i]))
		}
		if c, ok := pathChange(p, fs, res); ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// verifyAhead verifies the records of an rpm query as the query reads
// them, while rpm goes on formatting the rest in its own process: the
// query's time is rpm formatting every file of every package, and the
// verification of the files under /etc fits beside it instead of after
// it. The reader verifies what it read before it reads again, on its own
// goroutine: a goroutine more, woken per record, would cost more wake-ups
// than the verification. Each record is verified as Verify verifies it,
// and the results are put together as Verify does (pathChange), path by
// path in the records' order.
type verifyAhead struct {
	ctx     context.Context
	v       *verifier
	results map[string][]verifyResult
}

// startVerifyAhead reads the root's accounts for the verification; finish
// ends it, once.
func startVerifyAhead(ctx context.Context, r *ondisk.Root) (*verifyAhead, error) {
	db, err := accountdb.Read(r)
	if err != nil {
		return nil, err
	}
	return &verifyAhead{ctx: ctx, v: newVerifier(r, db), results: map[string][]verifyResult{}}, nil
}

// add verifies one record, unless the query is being given up.
func (a *verifyAhead) add(p string, f rpmFile) {
	if a.ctx.Err() != nil {
		return
	}
	a.results[p] = append(a.results[p], a.v.file(p, &f))
}

// finish ends the verification.
func (a *verifyAhead) finish() { a.v.close() }

// changes are the differences of the paths of b, all of whose records
// were handed over.
func (a *verifyAhead) changes(b *RPM) ([]Change, error) {
	if err := a.ctx.Err(); err != nil {
		return nil, err
	}
	var out []Change
	for _, p := range b.Paths {
		if c, ok := pathChange(p, b.Files[p], a.results[p]); ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// pathChange is a path's difference from every package's record of it
// (res[i] the verification of fs[i]): it differs where any of them says so
// (rpm -V lists it once per package).
func pathChange(p string, fs []rpmFile, res []verifyResult) (Change, bool) {
	var c Change
	var owners []string
	letters := []byte(".........")
	for i := range fs {
		res := &res[i]
		if !res.differs() {
			continue
		}
		owners = append(owners, fs[i].pkg)
		switch {
		case res.missing:
			if c.Op == 0 {
				c = Change{Path: p, Op: Removed, Base: res.base}
			}
		default:
			if c.Op == Removed {
				c = Change{}
			}
			c.Path, c.Op = p, Modified
			c.What |= res.what
			c.Base, c.Live = res.base, res.live
			if res.err != "" && c.Err == "" {
				c.Err = res.err
			}
			for k := 0; k < len(res.letters) && k < len(letters); k++ {
				if res.letters[k] != '.' {
					letters[k] = res.letters[k]
				}
			}
		}
	}
	if c.Op == 0 {
		return Change{}, false
	}
	c.Owner = strings.Join(owners, ",")
	if c.Op == Modified {
		c.RPM = string(letters)
	} else {
		c.RPM = "missing"
	}
	return c, true
}

// verifyResult is rpmfilesVerify's answer for one package's file.
type verifyResult struct {
	missing    bool
	what       What
	letters    string
	err        string
	base, live *Node
}

func (r *verifyResult) differs() bool { return r.missing || r.what != 0 || r.err != "" }

// file is rpmfilesVerify (rpm lib/verify.cc) for one record, minus the
// modification time, and with verifyHeader's filtering of missing %ghost
// and %config(missingok) files.
func (v *verifier) file(p string, f *rpmFile) verifyResult {
	flags := f.verify
	switch f.state {
	case stateNotInstalled, stateNetShared:
		return verifyResult{}
	case stateReplaced:
		flags = 0
	case stateWrongColor:
		flags &^= verifyDigest | verifySize | verifyMtime | verifyRdev
	}
	flags &^= verifyMtime
	want := v.expected(f)
	dfd, name, err := v.parent(p)
	if err != nil {
		if isNotExist(err) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			return v.missing(f, &want)
		}
		return verifyResult{err: errText(err), base: &want}
	}
	var st unix.Stat_t
	if err := fstatat(dfd, name, &st); err != nil {
		if isNotExist(err) {
			return v.missing(f, &want)
		}
		return verifyResult{err: errText(err), base: &want}
	}
	// A directory expected, a link to one found by a legitimate owner
	// (root, or the directory's owner): follow it, as fsmVerify does.
	if f.mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		var dst unix.Stat_t
		if err := unix.Fstatat(dfd, name, &dst, 0); err == nil && dst.Mode&unix.S_IFMT == unix.S_IFDIR && (st.Uid == 0 || st.Uid == dst.Uid) {
			st = dst
		}
	}
	live := nodeOf(&st)
	isLink := st.Mode&unix.S_IFMT == unix.S_IFLNK
	if isLink {
		flags &^= verifyMode
		live.Target, _ = readlinkat(dfd, name)
	} else {
		flags &^= verifyLinkTo
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		flags &^= verifyDigest | verifySize | verifyMtime | verifyCaps
	}
	ghost := f.flags&fileGhost != 0
	if ghost {
		flags &^= verifyDigest | verifySize | verifyMtime | verifyLinkTo
	}
	res := verifyResult{base: &want, live: &live}
	l := []byte(".........")
	// A file whose content is read is open when its xattrs are: they are
	// listed on its descriptor.
	x := xattrReader{v: v, dfd: dfd, name: name, fd: -1}
	defer x.close()
	if flags&verifyDigest != 0 {
		same, err := v.sameDigest(&x, f)
		switch {
		case err != nil:
			res.err = "reading: " + errText(err)
			l[2] = '?'
		case !same:
			res.what |= WContent
			l[2] = '5'
		}
	}
	if flags&verifyLinkTo != 0 {
		if t, err := readlinkat(dfd, name); err != nil {
			res.err = "reading the link: " + errText(err)
			l[4] = '?'
			res.what |= WTarget
		} else if t != f.linkTo {
			res.what |= WTarget
			l[4] = 'L'
		}
	}
	if flags&verifySize != 0 && st.Size != want.Size {
		res.what |= WContent
		l[0] = 'S'
	}
	if flags&verifyMode != 0 {
		meta, file := want.Fmt|want.Mode|typeBits(want.Type), uint32(st.Mode)
		if ghost {
			meta, file = meta&^unix.S_IFMT, file&^unix.S_IFMT
		}
		if meta != file || extendedACL(&x) {
			l[1] = 'M'
			if !ghost && meta&unix.S_IFMT != file&unix.S_IFMT {
				res.what |= WType
			} else {
				res.what |= WMode
			}
		}
	}
	if flags&verifyRdev != 0 {
		wt, gt := f.mode&unix.S_IFMT, st.Mode&unix.S_IFMT
		wdev, gdev := wt == unix.S_IFCHR || wt == unix.S_IFBLK, gt == unix.S_IFCHR || gt == unix.S_IFBLK
		if (wt == unix.S_IFCHR) != (gt == unix.S_IFCHR) || (wt == unix.S_IFBLK) != (gt == unix.S_IFBLK) ||
			wdev && gdev && f.rdev&0xffff != st.Rdev&0xffff {
			res.what |= WDevice
			l[3] = 'D'
		}
	}
	if flags&verifyCaps != 0 && !sameCaps(&x, f.caps) {
		res.what |= WCaps
		l[8] = 'P'
	}
	if flags&verifyUser != 0 && st.Uid != want.UID {
		res.what |= WOwner
		l[5] = 'U'
	}
	if flags&verifyGroup != 0 && st.Gid != want.GID {
		res.what |= WGroup
		l[6] = 'G'
	}
	res.letters = string(l)
	return res
}

// missing is a record's file that is not there: no difference for a
// %ghost or %config(missingok) file (verifyHeader filters them out).
func (v *verifier) missing(f *rpmFile, want *Node) verifyResult {
	if f.flags&(fileMissingOK|fileGhost) != 0 {
		return verifyResult{}
	}
	return verifyResult{missing: true, base: want}
}

// expected is the node a record describes, its user and group resolved in
// the root's accounts as rpmfilesStat resolves them (rpm lib/rpmfi.cc): a
// name that does not resolve is root's, without its set-id bit.
func (v *verifier) expected(f *rpmFile) Node {
	st := unix.Stat_t{Mode: f.mode}
	n := nodeOf(&st)
	if n.Type == ondisk.Regular || n.Type == ondisk.Symlink {
		n.Size = f.size
	}
	n.Target = f.linkTo
	if uid, ok := v.uid(f.user); ok {
		n.UID = uid
	} else {
		n.Mode &^= unix.S_ISUID
	}
	if gid, ok := v.gid(f.group); ok {
		n.GID = gid
	} else {
		n.Mode &^= unix.S_ISGID
	}
	return n
}

// uid resolves a user name as rpmugUid does: root is 0 without a lookup.
func (v *verifier) uid(name string) (uint32, bool) {
	if name == "root" {
		return 0, true
	}
	if u, ok := v.db.Users[name]; ok && u.UID >= 0 {
		return uint32(u.UID), true
	}
	return 0, false
}

func (v *verifier) gid(name string) (uint32, bool) {
	if name == "root" {
		return 0, true
	}
	if g, ok := v.db.Groups[name]; ok && g.GID >= 0 {
		return uint32(g.GID), true
	}
	return 0, false
}

func typeBits(t ondisk.FileType) uint32 {
	switch t {
	case ondisk.Regular:
		return unix.S_IFREG
	case ondisk.Directory:
		return unix.S_IFDIR
	case ondisk.Symlink:
		return unix.S_IFLNK
	}
	return 0
}

// parent opens the directory of host path p inside the root (links on
// the way resolved inside it, as rpm's own lstat through the chroot
// resolves them) and returns p's last name. The verifier keeps the
// descriptor for p's siblings.
func (v *verifier) parent(p string) (int, string, error) {
	dir, name := path.Split(p)
	dir = path.Clean(dir)
	if dir != v.dir || v.dirFD < 0 && v.dirErr == nil {
		v.close()
		v.dir = dir
		if v.dirFD, v.dirErr = v.root.OpenDir(dir); v.dirErr != nil {
			v.dirFD = -1
		}
	}
	return v.dirFD, name, v.dirErr
}

// sameDigest hashes a regular file with the record's algorithm
// (rpm's PGPHASHALGO numbers) and compares it with the record's digest;
// a record without one never matches (verify.cc: no digest is a
// difference).
func (v *verifier) sameDigest(x *xattrReader, f *rpmFile) (bool, error) {
	if f.digest == "" {
		return false, nil
	}
	var h hash.Hash
	switch f.algo {
	case 1:
		h = md5.New()
	case 2:
		h = sha1.New()
	case 8:
		h = sha256.New()
	case 9:
		h = sha512.New384()
	case 10:
		h = sha512.New()
	case 11:
		h = sha256.New224()
	default:
		return false, fmt.Errorf("digest algorithm %d unknown", f.algo)
	}
	fd, err := openRegular(x.dfd, x.name)
	if err != nil {
		return false, err
	}
	x.fd = fd
	if v.buf == nil {
		v.buf = make([]byte, compareChunk)
	}
	if err := hashFile(fd, h, v.buf); err != nil {
		return false, err
	}
	return hex.EncodeToString(h.Sum(nil)) == f.digest, nil
}

// extendedACL reports whether a node has an access ACL with entries beyond
// its mode (libacl's acl_equiv_mode returning 1), which rpm -V counts as
// a mode difference: rpm cannot have set it.
func extendedACL(x *xattrReader) bool {
	b, err := x.get(ondisk.XattrACLAccess)
	if err != nil || len(b) == 0 {
		return false
	}
	es, err := ondisk.ParseACL(b)
	if err != nil {
		return true
	}
	return len(es) > 3
}

// xattrReader reads the xattrs rpm -V compares of one node: on its
// descriptor once the file is open (one listing says which it has, and
// only those are read: most files have neither an ACL nor capabilities),
// else by name.
type xattrReader struct {
	v      *verifier
	dfd    int
	name   string
	fd     int
	listed bool
	names  []byte
	err    error
}

func (x *xattrReader) close() {
	if x.fd >= 0 {
		unix.Close(x.fd)
		x.fd = -1
	}
}

// get reads attr: unix.ENODATA when the node has none.
func (x *xattrReader) get(attr string) ([]byte, error) {
	if x.fd < 0 {
		return getxattrAt(x.dfd, x.name, attr)
	}
	if !x.listed {
		x.names, x.err = flistxattr(x.fd, &x.v.xattrs)
		x.listed = true
	}
	if x.err != nil {
		return nil, x.err
	}
	for rest := x.names; len(rest) > 0; {
		n, more, _ := bytes.Cut(rest, []byte{0})
		if string(n) == attr {
			return fgetxattr(x.fd, attr)
		}
		rest = more
	}
	return nil, unix.ENODATA
}
