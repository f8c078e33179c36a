package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/desired/statekey"
	"github.com/drift-monitor/drift-monitor/internal/enablement"
	"github.com/drift-monitor/drift-monitor/internal/memlimit"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/statecache"
	"github.com/drift-monitor/drift-monitor/test/floor"
)

// A contender is one way of reading a fixture in full, timed as a process.
type contender struct {
	Key  string // short name for the table
	Desc string // the exact command, for the report
	Cmd  []string
	OK   []int // exit codes that mean success
}

// fullResult is the outcome of part 1 for one fixture.
type fullResult struct {
	Label    string
	Files    int
	Bytes    int64
	Runs     int
	Order    []string
	Cont     map[string]contender
	Samples  samples
	Phases   []phaseReport
	AIDEInit time.Duration
	CfgBytes int64 // the config's size
	// Specs are the same config in each spec, and as a MachineConfig, each
	// checked cold (cold@…): at 10,000 files and fewer.
	Specs []specConfig
}

func (r *fullResult) medWall(k string) time.Duration { return r.Samples.medWall(k) }

func (r *fullResult) medCPU(k string) time.Duration { return r.Samples.medCPU(k) }

func (r *fullResult) maxRSS(k string) int64 { return r.Samples.maxRSS(k) }

// samples are the timed runs of each contender, by key.
type samples map[string][]run

func (s samples) medWall(k string) time.Duration {
	var ds []time.Duration
	for _, r := range s[k] {
		ds = append(ds, r.Wall)
	}
	return median(ds)
}

func (s samples) medCPU(k string) time.Duration {
	var ds []time.Duration
	for _, r := range s[k] {
		ds = append(ds, r.CPU)
	}
	return median(ds)
}

func (s samples) maxRSS(k string) int64 {
	var m int64
	for _, r := range s[k] {
		m = max(m, r.MaxRSS)
	}
	return m
}

// aideConf writes an AIDE configuration that checks p+u+g+sha256 of the
// fixture's regular files only, with its databases in the fixture directory.
// It is as fair to AIDE as it can be: one worker per CPU (AIDE's default is
// one), and no hashing of its own database for the report (database_attrs=E;
// the default hashes it with eleven algorithms).
func aideConf(f *fixture, workers int) (string, error) {
	dir := filepath.Join(f.Dir, "aide")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	sel := filepath.Join(f.Root, "etc/bench")
	if f.big {
		sel = filepath.Join(f.Root, filepath.Dir(bigPath))
	}
	conf := fmt.Sprintf(`# drift-monitor bench: the declared files only, sha256 + permissions + owner.
database_in=file:%[1]s/aide.db
database_out=file:%[1]s/aide.db.new
gzip_dbout=no
database_attrs=E
num_workers=%[3]d
report_url=stdout
DM = p+u+g+sha256
%[2]s f DM
`, dir, sel, workers)
	p := filepath.Join(dir, "aide.conf")
	return p, os.WriteFile(p, []byte(conf), 0o644)
}

// specRowsMax is the largest fixture checked in every spec: the per-spec
// targets are set at 10,000 files, and at 100,000 the rows would add
// minutes to every round.
const specRowsMax = 10000

func (b *bench) fullCheck(ctx context.Context, f *fixture, label string) (*fullResult, error) {
	conf, err := aideConf(f, runtime.NumCPU())
	if err != nil {
		return nil, err
	}
	b.logf("part 1 %s: aide --init", label)
	init, err := timeCmd(ctx, []int{0}, "aide", "--init", "-c", conf)
	if err != nil {
		return nil, err
	}
	if err := os.Rename(filepath.Join(f.Dir, "aide/aide.db.new"), filepath.Join(f.Dir, "aide/aide.db")); err != nil {
		return nil, err
	}
	res := &fullResult{Label: label, Files: len(f.Paths), Bytes: f.Bytes, Runs: b.runs, Cont: map[string]contender{},
		Samples: samples{}, AIDEInit: init.Wall}
	if fi, err := os.Stat(f.Cfg); err == nil {
		res.CfgBytes = fi.Size()
	}
	if err := b.contenders(res, f, conf); err != nil {
		return nil, err
	}
	if err := b.rounds(ctx, res, label); err != nil {
		return nil, err
	}
	return res, nil
}

// contenders lists in res what part 1 times over f, in the order the rounds
// run them; conf is AIDE's configuration.
func (b *bench) contenders(res *fullResult, f *fixture, conf string) error {
	par := 2 * runtime.NumCPU()
	add := func(c contender) {
		res.Order = append(res.Order, c.Key)
		res.Cont[c.Key] = c
	}
	// drift-monitor as root runs it: its state cache (/var/cache/drift-monitor)
	// holds the state derived from this config after the untimed first run,
	// as AIDE's database is initialised before timing. "cold" parses the
	// config every time.
	add(contender{Key: "drift-monitor", Cmd: []string{b.bin, "check", "--root", f.Root, "--config", f.Cfg}, OK: []int{0}})
	add(contender{Key: "cold", Cmd: []string{b.bin, "check", "--no-cache", "--root", f.Root, "--config", f.Cfg}, OK: []int{0}})
	if b.before != "" {
		add(contender{Key: "cold-before", Cmd: []string{b.before, "check", "--no-cache", "--root", f.Root, "--config", f.Cfg}, OK: []int{0}})
	}
	if !f.big && len(f.Paths) <= specRowsMax {
		specs, err := specConfigs(f)
		if err != nil {
			return err
		}
		res.Specs = specs
		for _, s := range specs {
			add(contender{Key: s.Key, Cmd: []string{b.bin, "check", "--no-cache", "--root", f.Root, "--config", s.Path}, OK: []int{0}})
		}
	}
	add(contender{Key: "aide", Cmd: []string{"aide", "--check", "-c", conf}, OK: []int{0}})
	add(contender{Key: "cat", Cmd: []string{"sh", "-c", fmt.Sprintf("find %s -type f -print0 | xargs -0 cat > /dev/null", f.Root)}, OK: []int{0}})
	add(contender{Key: "read1", Cmd: []string{b.self, "read", "-j", "1", f.Root}, OK: []int{0}})
	add(contender{Key: "readP", Cmd: []string{b.self, "read", "-j", strconv.Itoa(par), f.Root}, OK: []int{0}})
	add(contender{Key: "checkP", Cmd: []string{b.self, "read", "-meta", "-j", strconv.Itoa(par), f.Root}, OK: []int{0}})
	if f.big {
		add(contender{Key: "sha512sum", Cmd: []string{"sh", "-c", "sha512sum " + filepath.Join(f.Root, bigPath) + " > /dev/null"}, OK: []int{0}})
	}
	add(contender{Key: "phases", Cmd: []string{b.self, "phases", "--root", f.Root, "--config", f.Cfg}, OK: []int{0}})
	for _, k := range res.Order {
		c := res.Cont[k]
		c.Desc = shellQuote(c.Cmd)
		res.Cont[k] = c
	}
	return nil
}

// rounds runs every contender once untimed, then b.runs rounds of them all.
func (b *bench) rounds(ctx context.Context, res *fullResult, label string) error {
	// Warm the page cache and every binary once, then alternate.
	for _, k := range res.Order {
		c := res.Cont[k]
		if _, err := timeCmd(ctx, c.OK, c.Cmd[0], c.Cmd[1:]...); err != nil {
			return err
		}
	}
	for i := 0; i < b.runs; i++ {
		b.logf("part 1 %s: round %d/%d", label, i+1, b.runs)
		for _, k := range res.Order {
			c := res.Cont[k]
			if k == "phases" {
				p, r, err := runPhases(ctx, c.Cmd)
				if err != nil {
					return err
				}
				res.Phases = append(res.Phases, p)
				res.Samples[k] = append(res.Samples[k], r)
				continue
			}
			r, err := timeCmd(ctx, c.OK, c.Cmd[0], c.Cmd[1:]...)
			if err != nil {
				return err
			}
			res.Samples[k] = append(res.Samples[k], r)
		}
	}
	return nil
}

// phaseReport splits drift-monitor's check into loading the desired state
// and comparing it with the disk, measured inside one process.
type phaseReport struct {
	Entries   int   `json:"entries"`
	LoadNS    int64 `json:"load_ns"`
	CompareNS int64 `json:"compare_ns"`
	// After loading: the live heap (after a GC) and the total allocated.
	HeapLive  uint64 `json:"heap_live"`
	HeapAlloc uint64 `json:"heap_total_alloc"`
	MaxRSS    int64  `json:"max_rss"`
}

func runPhases(ctx context.Context, argv []string) (phaseReport, run, error) {
	var p phaseReport
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	out, err := cmd.Output()
	r := run{Wall: time.Since(start)}
	if err != nil {
		return p, r, fmt.Errorf("%v: %w", argv, err)
	}
	r.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.MaxRSS = ru.Maxrss << 10
	}
	if err := json.Unmarshal(out, &p); err != nil {
		return p, r, fmt.Errorf("%v: %w", argv, err)
	}
	p.MaxRSS = r.MaxRSS
	return p, r, nil
}

// cmdPhases is `drift-bench phases --root R --config C`: what `drift-monitor
// check` does, timed by phase (the comparison runs twice; the second, warm,
// is reported).
func cmdPhases(args []string) error {
	flags := newFlagSet("phases")
	root := flags.String("root", "", "fixture root")
	cfg := flags.String("config", "", "config")
	cpuprofile := flags.String("cpuprofile", "", "write a CPU profile of the load to this file")
	memprofile := flags.String("memprofile", "", "write an allocation profile of the load to this file")
	peakprofile := flags.String("peakprofile", "", "write the heap profile of the load's largest heap to this file")
	cacheDir := flags.String("cache", "", "load through a state cache in `DIR` (as check does); empty parses")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *memprofile != "" || *peakprofile != "" {
		runtime.MemProfileRate = 64 << 10
	}
	var peak *peakProfiler
	if *peakprofile != "" {
		peak = startPeakProfiler(10 * time.Millisecond)
	}
	if *cpuprofile != "" {
		out, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer out.Close()
		if err := pprof.StartCPUProfile(out); err != nil {
			return err
		}
	}
	r, err := ondisk.OpenRoot(*root)
	if err != nil {
		return err
	}
	start := time.Now()
	var cache statekey.Cache
	if *cacheDir != "" {
		cache = &statecache.Cache{Dir: *cacheDir}
	}
	st, err := desired.LoadCached(cache, r, []string{*cfg}, memlimit.ConfigLoad)
	pprof.StopCPUProfile()
	if peak != nil {
		if err := peak.write(*peakprofile); err != nil {
			return err
		}
	}
	if *memprofile != "" {
		if err := writeHeapProfile(*memprofile); err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	load := time.Since(start)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	c := &check.Checker{Root: r, Units: enablement.Offline{Root: r}}
	var cmp time.Duration
	for i := 0; i < 2; i++ {
		t := time.Now()
		res := c.All(context.Background(), st.Entries)
		cmp = time.Since(t)
		if !res.Clean() {
			return fmt.Errorf("drift in a clean fixture: %s", res.Drift[0].Message)
		}
	}
	return json.NewEncoder(os.Stdout).Encode(phaseReport{Entries: len(st.Entries), LoadNS: int64(load), CompareNS: int64(cmp),
		HeapLive: ms.HeapAlloc, HeapAlloc: ms.TotalAlloc})
}

func writeHeapProfile(path string) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(out, 0); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// cmdFixture is `drift-bench fixture -n N DIR`: writes (or reuses) the
// N-file fixture of part 1 under DIR, for profiling by hand.
func cmdFixture(args []string) error {
	flags := newFlagSet("fixture")
	n := flags.Int("n", 10000, "declared files")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() != 1 {
		return fmt.Errorf("usage: drift-bench fixture -n N DIR")
	}
	f, err := makeFixture(flags.Arg(0), *n)
	if err != nil {
		return err
	}
	fmt.Printf("root %s\nconfig %s\n", f.Root, f.Cfg)
	return nil
}

// cmdRead is `drift-bench read [-meta] -j J ROOT`: a floor that only walks
// the tree, opens and reads every regular file, in one process with J
// goroutines. With -meta it does instead what a check must do per file by
// its contract (the internal/check package doc: every content read, every
// node's metadata observed), as bare system calls in the cheapest shape:
// each directory opened once, and per file, relative to it, statx without
// following it, open without following it, a read of its size and one byte
// more (which tells its end), the list of its extended attributes and the
// value of each listed.
func cmdRead(args []string) error {
	flags := newFlagSet("read")
	j := flags.Int("j", 1, "goroutines reading")
	meta := flags.Bool("meta", false, "stat each file and read its xattrs too, as a check must, directory by directory")
	if err := flags.Parse(args); err != nil {
		return err
	}
	root := flags.Arg(0)
	if *meta {
		return readMetaTree(root, *j)
	}
	files := make(chan string, 1024)
	var wg sync.WaitGroup
	errs := make(chan error, *j)
	for w := 0; w < *j; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 128<<10)
			for p := range files {
				if err := readAll(p, buf); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			if *j == 1 {
				return readAll(p, nil)
			}
			files <- p
		}
		return nil
	})
	close(files)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// readMetaTree is `read -meta`: the tree's regular files by directory,
// each directory's done by one of j goroutines (package floor).
func readMetaTree(root string, j int) error {
	byDir := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			dir := filepath.Dir(p)
			byDir[dir] = append(byDir[dir], d.Name())
		}
		return nil
	})
	if err != nil {
		return err
	}
	return floor.Run(byDir, j, true)
}

var readBuf = make([]byte, 128<<10)

func readAll(p string, buf []byte) error {
	if buf == nil {
		buf = readBuf
	}
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	for {
		n, err := syscall.Read(fd, buf)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}
