// client-go-peer: a leader-election candidate built on client-go's
// tools/leaderelection, as a Go controller runs it, for tests that run
// client-go beside kube-elector on a real kube-apiserver.
//
// It runs leaderelection's LeaderElector on a resourcelock.LeaseLock (built
// by resourcelock.NewFromKubeconfig: requests time out at half the renew
// deadline) with ReleaseOnCancel, and prints one line per event on stdout:
//
//	<mono_ns> <wall> <identity> <event>[ <arg>]
//
// <mono_ns> is CLOCK_MONOTONIC in nanoseconds (the clock a Rust process reads
// with clock_gettime, so that lines of different processes compare), <wall>
// the UTC wall time in RFC 3339 with nanoseconds. Events: started, leading,
// tick (every --tick-ms while leading, from the work OnStartedLeading runs),
// stopped, leader <id> (OnNewLeader; no argument when the record it saw has
// no holder, as after a release), exit. See README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Exit codes: 0 after SIGTERM or SIGINT, 1 when leadership was lost (Run
// returned by itself, as a Go controller then exits), 2 on a usage or
// configuration error.
const (
	exitLost  = 1
	exitUsage = 2
)

// out writes the event lines: one write(2) per line, under a lock, its
// timestamps taken under the same lock so that the lines are in order.
type out struct {
	mu       sync.Mutex
	identity string
}

func (o *out) event(event string, arg ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	wall := time.Now().UTC().Format("2006-01-02T15:04:05.000000000Z")
	line := strconv.FormatInt(ts.Nano(), 10) + " " + wall + " " + o.identity + " " + event
	for _, a := range arg {
		line += " " + a
	}
	// os.Stdout is not buffered: the line is out when Write returns.
	if _, err := os.Stdout.WriteString(line + "\n"); err != nil {
		// Nobody reads any more: nothing to report to.
		os.Exit(exitLost)
	}
}

// work is the leader's work: what OnStartedLeading runs, and how it is
// stopped. One term at most (the elector runs once).
type work struct {
	out    *out
	tick   time.Duration
	mu     sync.Mutex
	ended  bool // stop ran: no term starts after it
	cancel context.CancelFunc
	done   chan struct{}
}

// start is OnStartedLeading: prints `leading` and ticks until its context is
// done, as a controller works until client-go cancels it.
func (w *work) start(ctx context.Context) {
	w.mu.Lock()
	if w.ended {
		// The elector stopped (or a signal came) before this goroutine ran:
		// no work was done in this term, and none will be.
		w.mu.Unlock()
		return
	}
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = make(chan struct{})
	w.out.event("leading")
	w.mu.Unlock()
	defer close(w.done)

	ticker := time.NewTicker(w.tick)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			w.out.event("tick")
		}
	}
}

// stop ends the work and waits for it, then prints `stopped` if it was
// leading; at most once. Run by OnStoppedLeading, and on a signal before the
// elector's context is cancelled.
func (w *work) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	w.ended = true
	if w.cancel == nil {
		return
	}
	w.cancel()
	<-w.done
	w.out.event("stopped")
}

type options struct {
	id, lease, namespace, kubeconfig string
	leaseDuration, renewDeadline     time.Duration
	retryPeriod, tick                time.Duration
	coordinated                      bool
	binaryVersion, emulationVersion  string
	candidateNamespace               string
	read                             bool
	elections                        int
}

func usageError(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "client-go-peer: "+format+"\n", a...)
	os.Exit(exitUsage)
}

func parseFlags() options {
	fs := flag.NewFlagSet("client-go-peer", flag.ExitOnError) // exits 2
	id := fs.String("id", "", "identity (the Lease's holderIdentity when leading; required)")
	lease := fs.String("lease", "", "name of the Lease (required)")
	namespace := fs.String("namespace", "", "namespace of the Lease (required)")
	kubeconfig := fs.String("kubeconfig", "", "path of the kubeconfig (required)")
	leaseMs := fs.Int64("lease-duration-ms", 0, "LeaseDuration in milliseconds (required)")
	renewMs := fs.Int64("renew-deadline-ms", 0, "RenewDeadline in milliseconds (required)")
	retryMs := fs.Int64("retry-period-ms", 0, "RetryPeriod in milliseconds (required)")
	tickMs := fs.Int64("tick-ms", 100, "period of the leader's tick lines in milliseconds")
	coordinated := fs.Bool("coordinated", false, "coordinated leader election: Coordinated, and a LeaseCandidate")
	binaryVersion := fs.String("binary-version", "1.36.0", "the LeaseCandidate's binaryVersion (--coordinated)")
	emulationVersion := fs.String("emulation-version", "1.36.0", "the LeaseCandidate's emulationVersion (--coordinated)")
	candidateNamespace := fs.String("candidate-namespace", "", "namespace of the LeaseCandidate (default: --namespace)")
	elections := fs.Int("elections", 0, "run this many elections in one process, on the Leases <lease>-0 … <lease>-(N-1) (see many.go)")
	read := fs.Bool("read", false, "print the Lease's record as client-go reads it (one JSON line) and exit; needs only --lease, --namespace, --kubeconfig")
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() > 0 {
		usageError("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *read {
		for name, v := range map[string]string{"lease": *lease, "namespace": *namespace, "kubeconfig": *kubeconfig} {
			if v == "" {
				usageError("--%s is required", name)
			}
		}
		return options{lease: *lease, namespace: *namespace, kubeconfig: *kubeconfig, read: true}
	}
	for _, name := range []string{"id", "lease", "namespace", "kubeconfig", "lease-duration-ms", "renew-deadline-ms", "retry-period-ms"} {
		if !set[name] {
			usageError("--%s is required", name)
		}
	}
	for name, v := range map[string]string{"id": *id, "lease": *lease, "namespace": *namespace, "kubeconfig": *kubeconfig} {
		if v == "" || strings.ContainsAny(v, " \t\n") {
			usageError("--%s must be a non-empty word, not %q", name, v)
		}
	}
	for name, v := range map[string]int64{"lease-duration-ms": *leaseMs, "renew-deadline-ms": *renewMs, "retry-period-ms": *retryMs, "tick-ms": *tickMs} {
		if v <= 0 {
			usageError("--%s must be positive, not %d", name, v)
		}
	}
	if *elections < 0 || *elections > 0 && *coordinated {
		usageError("--elections must be positive, and is not coordinated")
	}
	if *candidateNamespace == "" {
		*candidateNamespace = *namespace
	}
	return options{
		id: *id, lease: *lease, namespace: *namespace, kubeconfig: *kubeconfig,
		leaseDuration: time.Duration(*leaseMs) * time.Millisecond,
		renewDeadline: time.Duration(*renewMs) * time.Millisecond,
		retryPeriod:   time.Duration(*retryMs) * time.Millisecond,
		tick:          time.Duration(*tickMs) * time.Millisecond,
		coordinated:   *coordinated,
		binaryVersion: *binaryVersion, emulationVersion: *emulationVersion,
		candidateNamespace: *candidateNamespace,
		elections:          *elections,
	}
}

func main() {
	opts := parseFlags()

	config, err := clientcmd.BuildConfigFromFlags("", opts.kubeconfig)
	if err != nil {
		usageError("kubeconfig %s: %v", opts.kubeconfig, err)
	}
	config = rest.AddUserAgent(config, "client-go-peer/"+opts.id)
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		usageError("client: %v", err)
	}

	if opts.read {
		readRecord(client, opts)
		return
	}
	if opts.elections > 0 {
		runMany(opts, config)
		return
	}

	// The lock as client-go builds one from a kubeconfig: its own client
	// with a request timeout of half the renew deadline (at least 1 s), so
	// that one hung request cannot take the whole deadline (controller-runtime
	// does the same).
	lock, err := resourcelock.NewFromKubeconfig(resourcelock.LeasesResourceLock, opts.namespace, opts.lease,
		resourcelock.ResourceLockConfig{Identity: opts.id}, config, opts.renewDeadline)
	if err != nil {
		usageError("lock: %v", err)
	}

	o := &out{identity: opts.id}
	w := &work{out: o, tick: opts.tick}
	election := electorConfig(opts, lock, opts.lease, leaderelection.LeaderCallbacks{
		OnStartedLeading: w.start,
		OnStoppedLeading: w.stop,
		OnNewLeader: func(identity string) {
			if identity == "" {
				o.event("leader")
			} else {
				o.event("leader", identity)
			}
		},
	})
	election.Coordinated = opts.coordinated
	elector, err := leaderelection.NewLeaderElector(election)
	if err != nil {
		usageError("%v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var candidate sync.WaitGroup
	if opts.coordinated {
		lc, _, err := leaderelection.NewCandidate(client, opts.candidateNamespace, opts.id, opts.lease,
			opts.binaryVersion, opts.emulationVersion, coordinationv1.OldestEmulationVersion)
		if err != nil {
			usageError("LeaseCandidate: %v", err)
		}
		candidate.Go(func() { lc.Run(ctx) })
	}

	// SIGTERM, SIGINT: the work ends first (client-go's ReleaseOnCancel asks
	// that all code guarded by the lease has completed before the context is
	// cancelled), then the context, and client-go releases the Lease.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	var signalled sync.WaitGroup
	signalled.Add(1)
	var bySignal bool
	go func() {
		defer signalled.Done()
		select {
		case <-signals:
			bySignal = true
			w.stop()
			cancel()
		case <-ctx.Done():
		}
	}()

	o.event("started")
	elector.Run(ctx) // returns when the context is cancelled or the lease is lost
	w.stop()         // OnStoppedLeading ran: a no-op, unless it panicked
	cancel()
	signalled.Wait()
	candidate.Wait()
	o.event("exit")
	if !bySignal {
		fmt.Fprintln(os.Stderr, "client-go-peer: leader election lost")
		os.Exit(exitLost)
	}
}

// readRecord prints the Lease's record as client-go's LeaseLock reads it, as
// one JSON line: the LeaderElectionRecord's fields under their JSON names,
// times in RFC 3339 with all the digits client-go keeps ("" when unset), and
// the Lease's resourceVersion.
// Exits 1 when the Lease cannot be read.
func readRecord(client kubernetes.Interface, opts options) {
	// What LeaseLock.Get does (a get, then LeaseSpecToLeaderElectionRecord),
	// keeping the resourceVersion read, so that a reader can tell which
	// version of the Lease this is.
	lease, err := client.CoordinationV1().Leases(opts.namespace).Get(context.Background(), opts.lease, metav1.GetOptions{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "client-go-peer: reading Lease %s/%s: %v\n", opts.namespace, opts.lease, err)
		os.Exit(exitLost)
	}
	record := resourcelock.LeaseSpecToLeaderElectionRecord(&lease.Spec)
	at := func(t metav1.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	line, err := json.Marshal(map[string]any{
		"holderIdentity":       record.HolderIdentity,
		"leaseDurationSeconds": record.LeaseDurationSeconds,
		"acquireTime":          at(record.AcquireTime),
		"renewTime":            at(record.RenewTime),
		"leaderTransitions":    record.LeaderTransitions,
		"strategy":             string(record.Strategy),
		"preferredHolder":      record.PreferredHolder,
		"resourceVersion":      lease.ResourceVersion,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "client-go-peer: %v\n", err)
		os.Exit(exitLost)
	}
	os.Stdout.Write(append(line, '\n'))
}

// electorConfig is the LeaderElectionConfig of every elector here: the
// timings of the flags, ReleaseOnCancel.
func electorConfig(opts options, lock resourcelock.Interface, name string, callbacks leaderelection.LeaderCallbacks) leaderelection.LeaderElectionConfig {
	return leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   opts.leaseDuration,
		RenewDeadline:   opts.renewDeadline,
		RetryPeriod:     opts.retryPeriod,
		ReleaseOnCancel: true,
		Name:            name,
		Callbacks:       callbacks,
	}
}
