package daemon

import (
	"context"
	"time"
)

// startWatchdog feeds systemd's watchdog only when the event loop answers a
// ping: a stuck loop stops the pings and systemd restarts the service.
func (d *Daemon) startWatchdog(ctx context.Context) chan chan struct{} {
	pings := make(chan chan struct{})
	if d.o.Notify == nil {
		return pings
	}
	interval, ok := d.o.Notify.WatchdogInterval()
	if !ok || interval <= 0 {
		return pings
	}
	go func() {
		t := time.NewTicker(interval / 2)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-d.done:
				return
			case <-t.C:
			}
			reply := make(chan struct{})
			select {
			case pings <- reply:
			case <-t.C: // the loop did not take the ping in time: no WATCHDOG=1
				continue
			case <-d.done:
				return
			}
			<-reply
			d.o.Notify.Watchdog()
		}
	}()
	return pings
}
