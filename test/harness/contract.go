package harness

import "time"

// The MESSAGE_IDs of the daemon's records (drift-monitor(8), the journal
// catalog), one per record type. They are spelled out rather than taken from
// internal/journal: they are a contract with whoever reads the journal, and
// a changed id must fail a test (contract_test.go).
const (
	MsgStarted             = "8b0b39fbb9b249ac86ffc0286dff375a"
	MsgReady               = "e8dfcfc985ce42489b66712d946e4a75"
	MsgDriftResolved       = "b18cc3fb8eed46159699a7acbb8c0764"
	MsgReloaded            = "cf5e743c6b274f0b899d2ddd43d6a0ab"
	MsgLoadFailed          = "caa901836f56409eaf593ca3c63f64e7"
	MsgWatchesExhausted    = "e351ea282f9b47caac4ae2f832c85719"
	MsgWatchesRestored     = "754f294c407544c99e3fa417f86e651e"
	MsgInhibited           = "6715476f77304f95829d61c3e13b9ce7"
	MsgResumed             = "c2585180d8b94e96a8ddc5ba2a2cfd1c"
	MsgStopping            = "5b1ec22f3ee24526bcd9728bc485c97a"
	MsgHookFailed          = "65967b676b2c4957b58a49d55c7eb400"
	MsgBusLost             = "68ba40b2f56244cdaa2dee8d2c5b06fa"
	MsgBusRestored         = "29e509fc37324813b3c7b972547784a4"
	MsgNotice              = "a094d4906b084c73bb73fef724cd195b"
	MsgReconciled          = "6de2f04fd46148ba9b38c78757a2fed8"
	MsgConfigIgnored       = "4371585d763144b78d04d38b56da5a3a"
	MsgNothingToWatch      = "e2318ddbe00c48e489fdc0de81db0771"
	MsgInhibitorsRewatched = "1f2393e7ffa04a159bed229bae376beb"
	MsgUndeclared          = "5ea6c596359c4d5ab7c1abb524279e15"
	MsgUndeclaredGone      = "700af2fa3c1e453ea8870bfbbb232209"
	MsgImage               = "4237923fbbd34d5ba171981be3fc4509"
	MsgMetricsFailed       = "0cca72b05fee42498754884e4b671551"
	MsgLoadSlow            = "80ed750a34534bdfb2c7c56102891828"
)

// DriftDetected is the type (DRIFT_MONITOR_RECORD) of the record of a
// drift, whatever the kind of entry: each kind has a MESSAGE_ID of its own
// (DriftDetectedIDs), so the tiers select drift records by their type, as a
// consumer that wants all of them does. Record.Matches takes it where it
// takes a MESSAGE_ID.
const DriftDetected = "drift-detected"

// DriftDetectedIDs are the MESSAGE_IDs of the drift of each kind of entry.
var DriftDetectedIDs = map[string]string{
	"file": "6f4c57ef2ae04abf9d40ae28d84a8b59", "directory": "ebf1fb8bacad473fad0d3ecde7b4a1c4",
	"link": "91ad9f1bdca646ec92891475cd2f4767", "hardlink": "fdcc24ab69bc4a9e9505857a14b649ca",
	"unit": "72791ae366b2430ca6402449720edb67", "dropin": "1e957d1bb74d4e3e9c84ef22c004c8d2",
	"mask": "fbb303a0b5e542f18cecfdb4a33c2725", "unmask": "f75534d1d2574d5d80af9dbd7bee8bfa",
	"enablement": "f3e94924a9ac47b8b5076cb3a8375a7c", "sshkeys": "362c971b075f4d43ab656b6b93f1fb57",
	"kernel-argument": "e814c218364643df96667b226910eb08", "os-image": "b943e445325f44888e866b957e6249b8",
	"kernel-type": "ecd0881d55744df19342995851f49455", "extension": "cd2f35b6026243c398ce505a66e37ffe",
	"fips": "532c2a904d2c4da3990510bb50b43936", "user": "1b9ebe8c1d7f4c5f8536014892348ec1",
	"group": "cb720bed747541348b72978714964ddb", "undeclared": "55db311ca3a645d4929363de8ae662c1",
}

// Report is what `drift-monitor check --format json` prints: one JSON
// object.
type Report struct {
	Root    string   `json:"root"`
	Clean   bool     `json:"clean"`
	Checked int      `json:"checked"`
	Drift   []Item   `json:"drift"`
	Notices []Item   `json:"notices"`
	Configs []string `json:"configs"`
	// LeftAlone are the declared entries the exclusions leave alone.
	LeftAlone []Left `json:"left_alone"`
}

// Left is a declared entry the exclusions leave alone, as check and
// reconcile list it.
type Left struct {
	Entry      string `json:"entry"`
	Path       string `json:"path"`
	Unit       string `json:"unit"`
	User       string `json:"user"`
	Group      string `json:"group"`
	ExcludedBy string `json:"excluded_by"`
}

// Item is one drift or notice of a Report (and what a ReconcileReport has
// left). Unit is set on unit-related items only, User on sshkeys items only.
type Item struct {
	Kind    string `json:"kind"`
	Entry   string `json:"entry"`
	Path    string `json:"path"`
	Unit    string `json:"unit"`
	User    string `json:"user"`
	Group   string `json:"group"`
	Message string `json:"message"`
	Diff    string `json:"diff"`
	Want    string `json:"want"`
	Got     string `json:"got"`
	// Writers and WriterUnknown: status's, with --attribution=audit.
	Writers       []Writer `json:"writers"`
	WriterUnknown string   `json:"writer_unknown"`
}

// Writer is one writer of a status Item (the journal's DRIFT_WRITER_*).
type Writer struct {
	LoginUser   string  `json:"login_user"`
	AUID        *uint32 `json:"auid"`
	Session     *uint32 `json:"session"`
	UID         *uint32 `json:"uid"`
	PID         *int    `json:"pid"`
	Comm        string  `json:"comm"`
	Exe         string  `json:"exe"`
	Syscall     string  `json:"syscall"`
	RemoteHost  string  `json:"remote_host"`
	SessionUser string  `json:"session_user"`
	Unit        string  `json:"unit"`
	Own         bool    `json:"own"`
}

// ReconcileReport is what `drift-monitor reconcile --format json` prints.
type ReconcileReport struct {
	DryRun    bool     `json:"dry_run"`
	Clean     bool     `json:"clean"`
	Repaired  []Action `json:"repaired"`
	Refused   []Action `json:"not_repaired"`
	Remaining []Item   `json:"remaining"`
	LeftAlone []Left   `json:"left_alone"`
}

// Action is one entry's repair, or why it was not repaired (Problem), with
// the drift it is about.
type Action struct {
	Entry   string   `json:"entry"`
	Path    string   `json:"path"`
	Unit    string   `json:"unit"`
	User    string   `json:"user"`
	Group   string   `json:"group"`
	Drift   []string `json:"drift"`
	Done    []string `json:"done"`
	Problem string   `json:"problem"`
}

// StatusReport is what `drift-monitor status --format json` prints: the
// running daemon's state, asked over the bus.
type StatusReport struct {
	State  string `json:"state"`
	Status string `json:"status"`
	// DriftCount is how many drifts the daemon knows (nil: the field is
	// missing); Drift lists them all unless DriftTruncated.
	DriftCount     *int        `json:"drift_count"`
	DriftTruncated bool        `json:"drift_truncated"`
	Drift          []Item      `json:"drift"`
	Inhibitors     []Inhibitor `json:"inhibitors"`
	LastCheck      *time.Time  `json:"last_check"`
	WatchedPaths   int         `json:"watched_paths"`
	Units          int         `json:"units"`
	Version        string      `json:"version"`
}

// Inhibitor is one held inhibitor of a StatusReport.
type Inhibitor struct {
	Who string `json:"who"`
	Why string `json:"why"`
	PID int    `json:"pid"`
}
