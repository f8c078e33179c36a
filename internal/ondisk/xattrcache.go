package ondisk

import (
	"sync"
	"sync/atomic"
	"time"
)

// XattrCache remembers the extended attributes of the nodes observed, from
// one check to the next (a daemon's passes), by inode and change time:
// setting or removing an xattr (an ACL, a capability, a label) changes the
// inode's ctime on every Linux filesystem, as writing content and chown do,
// and no caller can set ctime. An observation whose node has the device,
// inode, size, mtime and ctime of a remembered one reuses its xattrs
// instead of listing and reading them again.
//
// A ctime is only as fine as the filesystem's clock: a change in the same
// tick as the listing could leave ctime as it was. So, as git treats a
// "racily clean" index entry, a listing is remembered only when the node's
// ctime is older than RacyWindow at the time of the listing; a node changed
// more recently is read every time until it has been quiet that long.
//
// The cache holds at most two generations of Max nodes each (a node not
// seen for a generation is forgotten), in shards by inode so that a full
// check's workers do not queue on one lock; values are shared, never copied, so
// no caller may modify an observation's Xattrs. Safe for concurrent use.
type XattrCache struct {
	// Max is the size of a generation; 0 means 1<<17.
	Max int
	// RacyWindow; 0 means 2 seconds.
	RacyWindow time.Duration

	shards [xattrShards]xattrShard
	now    func() time.Time
	hits   atomic.Int64
	misses atomic.Int64
}

const xattrShards = 64

type xattrShard struct {
	mu        sync.Mutex
	cur, prev map[xattrKey]xattrEntry
	names     map[string]string // interned names
	values    map[string][]byte // interned values
}

// Hits and Misses count the lookups that found an entry and that did not.
func (c *XattrCache) Hits() int64   { return c.hits.Load() }
func (c *XattrCache) Misses() int64 { return c.misses.Load() }

// NewXattrCache is an empty cache.
func NewXattrCache() *XattrCache { return &XattrCache{} }

type xattrKey struct{ dev, ino uint64 }

type xattrEntry struct {
	size, mtime, ctime int64
	noLabel            bool // security.selinux was left unread
	xs                 []Xattr
}

func (c *XattrCache) get(m *Meta, noLabel bool) ([]Xattr, bool) {
	if c == nil || !m.stamped {
		return nil, false
	}
	k := xattrKey{m.dev, m.ino}
	sh := &c.shards[k.ino%xattrShards]
	sh.mu.Lock()
	e, ok := sh.cur[k]
	if !ok {
		if e, ok = sh.prev[k]; ok {
			sh.put(k, e, c.Max)
		}
	}
	sh.mu.Unlock()
	if !ok || e.size != m.size || e.mtime != m.mtime || e.ctime != m.ctime || e.noLabel != noLabel {
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	return e.xs, true
}

func (c *XattrCache) put(m *Meta, noLabel bool, xs []Xattr) {
	if c == nil || !m.stamped {
		return
	}
	window := c.RacyWindow
	if window == 0 {
		window = 2 * time.Second
	}
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	if now().UnixNano()-m.ctime < int64(window) {
		return // racily clean: not to be trusted yet
	}
	k := xattrKey{m.dev, m.ino}
	sh := &c.shards[k.ino%xattrShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.names == nil {
		sh.names, sh.values = map[string]string{}, map[string][]byte{}
	}
	var shared []Xattr
	for _, x := range xs {
		shared = append(shared, Xattr{Name: sh.internName(x.Name), Value: sh.internValue(x.Value)})
	}
	sh.put(k, xattrEntry{size: m.size, mtime: m.mtime, ctime: m.ctime, noLabel: noLabel, xs: shared}, c.Max)
}

// internName and internValue share the names and values that repeat (a
// label, an ACL); the dictionaries are bounded, as values need not repeat.
func (c *xattrShard) internName(s string) string {
	if t, ok := c.names[s]; ok {
		return t
	}
	if len(c.names) < 1<<8 {
		c.names[s] = s
	}
	return s
}

func (c *xattrShard) internValue(v []byte) []byte {
	if w, ok := c.values[string(v)]; ok {
		return w
	}
	if len(c.values) < 1<<8 {
		c.values[string(v)] = v
	}
	return v
}

func (c *xattrShard) put(k xattrKey, e xattrEntry, max int) {
	if max == 0 {
		max = 1 << 17
	}
	max = (max + xattrShards - 1) / xattrShards
	if c.cur == nil || len(c.cur) >= max {
		c.prev, c.cur = c.cur, make(map[xattrKey]xattrEntry, len(c.cur))
	}
	c.cur[k] = e
}
