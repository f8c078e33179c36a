package check

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io/fs"
	"sync"
	"sync/atomic"

	"github.com/drift-monitor/drift-monitor/internal/desired/statekey"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/selinux"
)

// A `check` on an SELinux host loaded the policy and looked every declared
// path up in it at every run: most of what labels added to a cached check.
// The answers are a function of the policy's files and of the paths asked
// about, so a check keeps them (LabelStore: the state cache) under a key
// that names those files by their contents, and a later check whose policy
// has the same contents answers from them without loading it. A lookup they
// do not answer (a path not declared before, a node of another type) loads
// the policy then, and the answers are kept again with it.
//
// The key is a digest of each policy file as a load of the desired state
// names each config file (statekey.DigestFiles): through the stamps the
// state cache remembers, where and while they are trusted (statekey.FileStamp
// says where: local filesystems this kernel writes, within one boot, once
// settled), otherwise by reading it. The policy is an input of a check as
// its config is, and is trusted as far; what a check compares — every
// declared node's label — is still read at every run, never taken from a
// stamp (the package doc). Answers are kept only under the key of the bytes
// they came from: those a load read (hashed as it read them), never a key
// taken before the load from files that may have changed in between.

// LabelStore keeps a policy's answers between checks (statecache.Cache).
type LabelStore interface {
	statekey.DigestMemo
	// LabelAnswers returns the answers kept under key; nil when none are.
	LabelAnswers(key selinux.PolicyKey) *selinux.Answers
	// KeepLabelAnswers keeps answers under key, replacing those kept.
	KeepLabelAnswers(key selinux.PolicyKey, answers []selinux.Answer)
}

// keptAnswers answer a check's lookups from the answers kept for its
// policy, and from the policy itself for the others.
type keptAnswers struct {
	store   LabelStore
	r       *ondisk.Root
	key     selinux.PolicyKey // what the stamps named (the answers')
	answers *selinux.Answers  // nil: none were kept
	// The policy, once loaded (at once without answers, else at the first
	// lookup they do not answer), the key of what the load read, and the
	// error that kept it from loading.
	once      sync.Once
	contexts  *selinux.Contexts
	loadedKey selinux.PolicyKey
	keyed     bool // loadedKey names what was loaded
	err       error
	// asked: which kept answers this check used; others: the answers it
	// gave to lookups of no entry's own path (the entries' are in the
	// slots, or own's answers), and, with own, of an entry's own path that
	// own lacked; missed: a lookup was answered by the policy, so the kept
	// answers lack one.
	asked []atomic.Bool
	// own: for each entry (by its position), the index of the kept
	// answer for its own path as the node it declares, or -1. A check
	// answered from kept answers finds its entries' defaults here, not
	// in slots: a slot holds two strings, and a slot per entry was memory
	// the collector had to scan at every check, growing with the entries.
	own     []int32
	mu      sync.Mutex
	others  []selinux.Answer
	missed  atomic.Bool
	entries int
}

// LoadLabelsKept is LoadLabels with the policy's answers kept in store
// between checks (nil: LoadLabels). Keep keeps them after the check.
func LoadLabelsKept(r *ondisk.Root, entries []model.Entry, full bool, store LabelStore) *Labels {
	if store == nil {
		return LoadLabels(r, entries, full)
	}
	k := &keptAnswers{store: store, r: r, entries: len(entries)}
	var ok bool
	if k.key, ok = policyKey(r, store); ok {
		k.answers = store.LabelAnswers(k.key)
	}
	if k.answers == nil {
		// Nothing kept: the policy is loaded now, as LoadLabels loads it,
		// its errors reported alike.
		k.once.Do(k.load)
		l := newLabels(k.contexts, nil, k.err, entries, full)
		if l != nil && k.contexts != nil {
			l.kept = k
		}
		return withHomes(l, r, entries)
	}
	k.asked = make([]atomic.Bool, k.answers.Len())
	l := labelsWithout(nil, nil, entries, full)
	l.kept = k
	k.fill(l)
	return withHomes(l, r, entries)
}

// declaredType is the node type an entry declares, as its default is
// first asked for; false for an entry that declares no node.
func declaredType(t model.Type) (selinux.FileType, bool) {
	switch t {
	case model.TypeRegular, model.TypeHardLink:
		return selinux.Regular, true
	case model.TypeDirectory:
		return selinux.Directory, true
	case model.TypeSymlink:
		return selinux.Symlink, true
	}
	return selinux.AnyType, false
}

// fill finds the kept answers for the entries' own paths as the nodes they
// declare (k.own): in one walk, both being sorted by path.
func (k *keptAnswers) fill(l *Labels) {
	k.own = make([]int32, len(l.entries))
	hint := 0
	for i := range l.entries {
		k.own[i] = -1
		e := &l.entries[i]
		t, ok := declaredType(e.Type)
		if !ok {
			continue
		}
		j, found := k.answers.Seek(e.Path, t, hint)
		hint = j
		if !found {
			continue
		}
		k.own[i] = int32(j)
		k.asked[j].Store(true)
	}
}

// ownLookup is the default of the entry at position i, whose path is p, as
// a node of type t: its kept answer when it is for that type, else as any
// other path's (noted for Keep when the policy answers it).
func (k *keptAnswers) ownLookup(i int, p string, t selinux.FileType) (string, bool) {
	if j := k.own[i]; j >= 0 && k.answers.TypeAt(int(j)) == t {
		return k.answers.At(int(j))
	}
	return k.lookup(p, t, false)
}

// lookup answers from the kept answers, else from the policy; what the
// policy answers is noted for Keep, unless it is an entry's own default
// (Keep finds those in the slots).
func (k *keptAnswers) lookup(p string, t selinux.FileType, ownPath bool) (string, bool) {
	if j, found := k.answers.Find(p, t); found {
		k.asked[j].Store(true)
		return k.answers.At(j)
	}
	if k.once.Do(k.load); k.contexts == nil {
		return "", false // k.err says why, in the check's notice
	}
	c, ok := k.contexts.Lookup(p, t)
	k.missed.Store(true)
	if !ownPath {
		k.mu.Lock()
		k.others = append(k.others, selinux.Answer{Path: p, Type: t, Context: c, OK: ok})
		k.mu.Unlock()
	}
	return c, ok
}

// load loads the root's policy, naming what it read.
func (k *keptAnswers) load() {
	type file struct {
		data    []byte
		present bool
	}
	read := map[string]file{}
	k.contexts, k.err = selinux.ForRoot(func(p string) ([]byte, error) {
		b, err := k.r.ReadFile(p)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			read[p] = file{b, err == nil}
		}
		return b, err
	})
	if k.contexts == nil {
		return
	}
	fc, _, err := selinux.PolicyOf(func(p string) ([]byte, error) {
		if f, ok := read[p]; ok && f.present {
			return f.data, nil
		}
		return nil, fs.ErrNotExist
	})
	if err != nil || fc == "" {
		return
	}
	var files []policyFile
	for _, name := range selinux.Files(fc) {
		f, ok := read[name]
		if !ok {
			return // not read: not named
		}
		pf := policyFile{present: f.present}
		if f.present {
			pf.size, pf.sum = int64(len(f.data)), statekey.DigestOf(f.data)
		}
		files = append(files, pf)
	}
	k.loadedKey, k.keyed = keyOfPolicy(fc, files), true
}

// Keep keeps the answers of this check for the next, when it had to ask the
// policy for some. Call it once the check is over.
func (l *Labels) Keep() {
	if l == nil || l.kept == nil {
		return
	}
	k := l.kept
	if !k.keyed || (k.answers != nil && (!k.missed.Load() || k.loadedKey != k.key)) {
		// Nothing new, or the policy changed since the answers used were
		// kept: kept anew once loaded with no answers.
		return
	}
	var list []selinux.Answer
	for i := range l.entries {
		e := &l.entries[i]
		t, ok := declaredType(e.Type)
		if !ok {
			continue
		}
		if k.own != nil {
			// Answered from the kept answers, or noted in others.
			if j := k.own[i]; j >= 0 {
				list = append(list, k.answers.Answer(int(j)))
			}
			continue
		}
		if c, ok, found := l.slots.Get(i, e.Path, t); found {
			list = append(list, selinux.Answer{Path: e.Path, Type: t, Context: c, OK: ok})
		}
	}
	list = append(list, k.others...)
	// The answers kept before and not asked this time (another config's,
	// checked in turn with this one) stay, up to as many again.
	room := len(list) + 1024
	for j := range k.answers.Len() {
		if !k.asked[j].Load() {
			if room--; room < 0 {
				break
			}
			list = append(list, k.answers.Answer(j))
		}
	}
	k.store.KeepLabelAnswers(k.loadedKey, list)
}

// policyFile is one of a policy's files as its key names it.
type policyFile struct {
	present bool
	size    int64
	sum     statekey.FileDigest
}

// policyKey names the policy the root's config names by its files'
// contents, through the stamps memo remembers; false when the root names
// none, or a file cannot be read whole (the policy is then loaded, and
// what is wrong said as LoadLabels says it).
func policyKey(r *ondisk.Root, memo statekey.DigestMemo) (selinux.PolicyKey, bool) {
	fc, _, err := selinux.PolicyOf(r.ReadFile)
	if err != nil || fc == "" {
		return selinux.PolicyKey{}, false
	}
	names := selinux.Files(fc)
	files := make([]policyFile, len(names))
	var present []string
	for i, name := range names {
		f, err := r.Open(name)
		switch {
		case errors.Is(err, fs.ErrNotExist) && i > 0:
			continue
		case err != nil:
			return selinux.PolicyKey{}, false
		}
		f.Close()
		files[i].present = true
		present = append(present, name)
	}
	sizes, sums, ok := statekey.DigestFiles(r.Open, present, memo)
	if !ok {
		return selinux.PolicyKey{}, false
	}
	for i, j := 0, 0; i < len(files); i++ {
		if files[i].present {
			files[i].size, files[i].sum = sizes[j], sums[j]
			j++
		}
	}
	return keyOfPolicy(fc, files), true
}

// keyOfPolicy is the key of the policy at fc whose files (selinux.Files'
// order) are these.
func keyOfPolicy(fc string, files []policyFile) selinux.PolicyKey {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field([]byte("drift-monitor SELinux policy\n"))
	field([]byte(fc))
	for _, f := range files {
		if !f.present {
			field([]byte("missing"))
			continue
		}
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(f.size))
		field(n[:])
		field(f.sum[:])
	}
	var k selinux.PolicyKey
	h.Sum(k[:0])
	return k
}
