package main

// --elections N: N LeaderElectors on N Leases in one process, as Go
// controllers that each elect share one binary (the server's-bill benchmark,
// testing/fleet/benches/bill.rs). Elector i elects on the Lease
// <lease>-<i> with identity <id>, each on a lock of its own built by
// resourcelock.NewFromKubeconfig (a clientset of its own, with client-go's
// default rate limit; the HTTP/2 connection is shared through client-go's
// transport cache), with ReleaseOnCancel. A lost election runs again, as the
// controller's replica would be restarted.
//
// Lines: `started` once every elector runs, then per Lease (termLines)
//
//	<mono_ns> <wall> <lease>/<id> leading
//	<mono_ns> <wall> <lease>/<id> stopped
//
// and `exit` after SIGTERM or SIGINT, once every elector has returned (and
// released what it held).

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func runMany(opts options, config *rest.Config) {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		cancel()
	}()

	var running sync.WaitGroup
	for i := range opts.elections {
		name := fmt.Sprintf("%s-%d", opts.lease, i)
		lock, err := resourcelock.NewFromKubeconfig(resourcelock.LeasesResourceLock, opts.namespace, name,
			resourcelock.ResourceLockConfig{Identity: opts.id}, config, opts.renewDeadline)
		if err != nil {
			usageError("lock %s: %v", name, err)
		}
		o := &out{identity: name + "/" + opts.id}
		running.Go(func() {
			for ctx.Err() == nil {
				elector, err := leaderelection.NewLeaderElector(electorConfig(opts, lock, name, termLines(o)))
				if err != nil {
					usageError("%v", err)
				}
				elector.Run(ctx)
			}
		})
	}
	process := &out{identity: opts.id}
	process.event("started")
	running.Wait()
	process.event("exit")
}

// termLines prints one term's `leading` and `stopped`: when the leader's work
// starts and when its context ends. client-go runs OnStartedLeading on a
// goroutine of its own and cancels its context before it releases the Lease
// (ReleaseOnCancel), so `stopped` comes before another process can lead; a
// term that ended before its goroutine ran prints nothing.
func termLines(o *out) leaderelection.LeaderCallbacks {
	return leaderelection.LeaderCallbacks{
		OnStartedLeading: func(ctx context.Context) {
			if ctx.Err() != nil {
				return
			}
			o.event("leading")
			<-ctx.Done()
			o.event("stopped")
		},
		OnStoppedLeading: func() {},
	}
}
