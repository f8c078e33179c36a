package daemon

import (
	"fmt"
	"time"
)

// The start's timeout. Until READY=1, systemd bounds a start with
// TimeoutStartSec= (its watchdog runs only from READY=1 on: WatchdogSec= in
// systemd.service(5)), and a start loads the desired state and checks it
// once: for a large config that can take longer than a start timeout, and
// systemd would kill the daemon and start it again, to be killed again. So
// while it starts the daemon asks systemd for more time
// (EXTEND_TIMEOUT_USEC, sd_notify(3)), startExtension at a time, asked again
// every third of it; systemd moves the timeout only later, never sooner
// (service_extend_timeout in src/core/service.c), so within the configured
// timeout the requests change nothing. It stops asking after
// startExtendMax: a start stuck for good is still ended by systemd, within
// startExtension of the last request, and restarted. It stops asking before
// READY=1 is sent: after it, the same message would put off the watchdog
// (service_extend_timeout extends the watchdog's timer too).
const (
	startExtension = 30 * time.Second
	startExtendMax = 15 * time.Minute
)

// startExtend are the start's extension and how long it is asked for
// (startExtension, startExtendMax; a test's shorter).
type startExtend struct {
	step, max time.Duration
}

// extendStart asks systemd to extend the start's timeout until the function
// it returns is called (which returns once no request can follow), or until
// d.startExt.max has passed.
func (d *Daemon) extendStart() (stop func()) {
	if d.o.Notify == nil {
		return func() {}
	}
	step, limit := d.startExt.step, d.startExt.max
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		giveUp := time.NewTimer(limit)
		defer giveUp.Stop()
		every := time.NewTicker(step / 3)
		defer every.Stop()
		for {
			d.o.Notify.ExtendTimeout(step)
			select {
			case <-done:
				return
			case <-giveUp.C:
				d.log.Warn(fmt.Sprintf("Still starting after %s: no longer asking systemd to extend the start's timeout (TimeoutStartSec=)", limit))
				return
			case <-every.C:
			}
		}
	}()
	var once bool
	return func() {
		if !once {
			once = true
			close(done)
			<-finished
		}
	}
}

// extendReload asks systemd for more time for a reload under way: the loop
// calls it when a load starts and every reloadExtendEvery while it runs.
// RELOADING=1 puts the unit in systemd's reload state, which
// TimeoutStartSec= bounds too, and systemd arms that timer afresh when the
// ExecReload= process (kill -HUP) exits and the reload goes on by
// notification (service_enter_reload_by_notify, src/core/service.c): an
// extension asked before then is lost, so they are asked again often. A
// large config's load can outlast the timeout: the reload job would fail
// though the daemon finishes it. Unlike the start's, these requests come
// from the loop, so that they put off the watchdog (service_extend_timeout
// extends it too) only while the loop runs: a stuck loop asks no more. At
// most startExtendMax of a load is extended.
func (d *Daemon) extendReload() {
	if d.o.Notify == nil || !d.loads.running || time.Since(d.loads.since) > d.startExt.max {
		return
	}
	d.o.Notify.ExtendTimeout(d.startExt.step)
}

// reloadExtendEvery is how often a reload's extension is asked again: well
// within the shortest TimeoutStartSec= a unit would set.
const reloadExtendEvery = time.Second
