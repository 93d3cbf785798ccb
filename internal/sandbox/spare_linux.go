package sandbox

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/mcpgen/mcpgen/internal/pid1"
	"golang.org/x/sys/unix"
)

// The setup step costs a start a whole mcpgen (the Go runtime and every
// package's init: some 15 ms here) and the namespaces it is made in. A
// spare pays that ahead of need: mcpgen's hidden entry, started in the
// namespaces a plan asks for, waiting on a socket for its order (the
// plan, the command, and the command's stdio as descriptors). Given one,
// it does what Main does. A launcher keeps one idle per kind of plan,
// and a server it starts or restarts then pays only for what the setup
// does after its start: mounting /proc, Landlock, forking the server.

// spareEntry is the hidden first argument of a spare: mcpgen SPARE-ENTRY,
// with its socket as descriptor 3.
const spareEntry = "__mcpgen_sandbox_spare"

// spareConn is the descriptor a spare's socket has in it.
const spareConn = 3

// maxOrder bounds the order a spare reads: the command's arguments and
// environment, which the kernel bounds too (ARG_MAX, some 2 MB).
const maxOrder = 8 << 20

// An order is what a spare is to run, with Files descriptors sent along:
// its stdin, stdout, stderr and then its ExtraFiles (3, 4...).
type order struct {
	Plan    plan     `json:"plan"`
	Program string   `json:"program"`
	Args    []string `json:"args"` // after the program's name
	Env     []string `json:"env"`
	Dir     string   `json:"dir,omitempty"`
	Files   int      `json:"files"`
}

// A kind is what a spare is started with: the namespaces of a plan.
type kind struct{ pidNS, netNS, userNS bool }

func kindOf(pl plan) kind { return kind{pl.PidNS, pl.NetNS, pl.UserNS} }

// Spares keeps a spare setup step of each kind that has been asked for,
// started in the background once one is taken. Its methods are safe for
// concurrent use; Close ends the spares.
type Spares struct {
	start   func(*exec.Cmd) error
	mu      sync.Mutex
	idle    map[kind]*Spare
	filling map[kind]bool
	failed  map[kind]error // why the last fill of a kind failed
	closed  bool
	fills   sync.WaitGroup // the fills under way
	filled  chan struct{}  // closed, and replaced, when a fill ends
	closing chan struct{}  // closed by Close
}

// NewSpares returns an empty set of spares: the first start of each kind
// pays for its setup step, and leaves a spare for the next. start starts
// a spare's process (nil: exec.Cmd's Start): a containment's, which knows
// that the child is no orphan of a server's.
func NewSpares(start func(*exec.Cmd) error) *Spares {
	if start == nil {
		start = (*exec.Cmd).Start
	}
	return &Spares{start: start, idle: map[kind]*Spare{}, filling: map[kind]bool{}, failed: map[kind]error{}, filled: make(chan struct{}), closing: make(chan struct{})}
}

// Take returns a spare setup step to run cmd in the sandbox p (Run),
// running, or nil when none is idle (the caller then uses Prepare). Either way one
// is started in the background for the next start of its kind. A spare
// is given descriptors: a cmd whose stdio are not files (or nil) gets
// none. Safe on nil (nil).
func (s *Spares) Take(cmd *exec.Cmd, p *Policy) *Spare {
	if s == nil || p.Check() != nil || !filesOnly(cmd) {
		return nil // Prepare says what is wrong
	}
	pl, r := decide(p)
	k := kindOf(pl)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	sp := s.idle[k]
	delete(s.idle, k)
	s.startFill(k, refillDelay)
	if sp != nil {
		sp.policy, sp.plan, sp.report = p, pl, r
	}
	return sp
}

// refillDelay is how long after a spare is taken the next one starts: the
// server it runs starts meanwhile without a whole mcpgen's start (some
// 15 ms of CPU) beside it.
const refillDelay = 200 * time.Millisecond

// Ready returns once a spare for p is idle, starting one if none is
// being started, or when ctx ends, or with the error that kept one from
// starting: so that a start which follows takes it (a benchmark's, a
// test's).
func (s *Spares) Ready(ctx context.Context, p *Policy) error {
	if err := p.Check(); err != nil {
		return err
	}
	pl, _ := decide(p)
	k := kindOf(pl)
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return errors.New("sandbox: the spares are closed")
		}
		if s.idle[k] != nil {
			s.mu.Unlock()
			return nil
		}
		s.startFill(k, 0)
		filled := s.filled
		s.mu.Unlock()
		select {
		case <-filled:
		case <-s.closing: // the loop says so
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		s.mu.Lock()
		err := s.failed[k]
		s.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// filesOnly says whether cmd's stdio are all files, or nil.
func filesOnly(cmd *exec.Cmd) bool {
	for _, std := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		switch std.(type) {
		case nil, *os.File:
		default:
			return false
		}
	}
	return true
}

// startFill starts a spare of kind k in the background, after delay,
// unless one is being started. s.mu is held.
func (s *Spares) startFill(k kind, delay time.Duration) {
	if !s.filling[k] {
		s.filling[k], s.failed[k] = true, nil
		s.fills.Add(1)
		go s.fill(k, delay) // ends when the spare has started, or failed to, or on Close
	}
}

// fill starts a spare of kind k after delay and keeps it, unless the set
// was closed meanwhile. One that fails to start is not retried until the
// next Take.
func (s *Spares) fill(k kind, delay time.Duration) {
	defer s.fills.Done()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-s.closing:
			t.Stop()
			s.mu.Lock()
			s.filling[k] = false
			s.mu.Unlock()
			return
		}
	}
	sp, err := startSpare(k, s.start)
	s.mu.Lock()
	s.filling[k] = false
	s.failed[k] = err
	close(s.filled)
	s.filled = make(chan struct{})
	keep := err == nil && !s.closed
	if keep {
		s.idle[k] = sp
	}
	s.mu.Unlock()
	if err == nil && !keep {
		sp.Discard()
	}
}

// Close ends the idle spares, and those being started, and returns once
// they have exited. Safe on nil.
func (s *Spares) Close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	if !s.closed {
		close(s.closing)
	}
	s.closed = true
	idle := s.idle
	s.idle = map[kind]*Spare{}
	s.mu.Unlock()
	for _, sp := range idle {
		sp.Discard()
	}
	s.fills.Wait()
}

// A Spare is one setup step waiting for its order.
type Spare struct {
	cmd  *exec.Cmd
	conn *os.File // ours; closing it ends a spare that has no order
	// What Take gave it to run: the policy, checked, and what was
	// decided of it, of this spare's kind.
	policy *Policy
	plan   plan
	report Report
}

// startSpare starts a spare of kind k: mcpgen's hidden entry in k's
// namespaces, leading a process group of its own, with nothing of this
// process's environment (the sandbox's PID 1 keeps the environment it
// was started with, and what runs inside can read it).
func startSpare(k kind, start func(*exec.Cmd) error) (*Spare, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: finding mcpgen itself: %v", err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: a spare's socket: %v", err)
	}
	// Ours polled (non-blocking), for the deadline on the spare's word.
	if err := unix.SetNonblock(pair[0], true); err != nil {
		unix.Close(pair[0])
		unix.Close(pair[1])
		return nil, fmt.Errorf("sandbox: a spare's socket: %v", err)
	}
	ours := os.NewFile(uintptr(pair[0]), "sandbox-spare")
	theirs := os.NewFile(uintptr(pair[1]), "sandbox-spare")
	defer theirs.Close()
	cmd := exec.Command(self, spareEntry)
	cmd.Env = []string{}
	cmd.ExtraFiles = []*os.File{theirs} // spareConn
	cmd.SysProcAttr = withNamespaces(&syscall.SysProcAttr{Setpgid: true}, plan{PidNS: k.pidNS, NetNS: k.netNS, UserNS: k.userNS})
	if err := start(cmd); err != nil {
		ours.Close()
		return nil, fmt.Errorf("sandbox: starting a spare: %v", err)
	}
	sp := &Spare{cmd: cmd, conn: ours}
	// Spare only once it waits for its order: what it costs to start is
	// then all behind it.
	theirs.Close()
	_ = ours.SetReadDeadline(time.Now().Add(spareStart))
	word := make([]byte, 1)
	if _, err := io.ReadFull(ours, word); err != nil || word[0] != spareReady {
		sp.Discard()
		if err == nil {
			err = fmt.Errorf("it said %q", word)
		}
		return nil, fmt.Errorf("sandbox: a spare did not start: %v", err)
	}
	_ = ours.SetReadDeadline(time.Time{})
	return sp, nil
}

// spareReady is the byte a spare writes once it waits for its order.
const spareReady = '.'

// spareStart bounds how long a spare may take to be ready: a machine so
// loaded that it takes longer has its starts prepared the usual way.
const spareStart = 30 * time.Second

// Cmd is the spare's process, started: the caller puts it where the
// command is to run (a container) before Run, and waits for it with
// Wait once Run has returned, as for a command it started itself.
func (sp *Spare) Cmd() *exec.Cmd { return sp.cmd }

// Discard ends a spare that has had no order, and waits for it. Its
// socket's end would do (it exits then), but one that is stopped, or stuck
// in its start, would keep the caller (a launcher's Close) waiting: it is
// killed, which costs it nothing, as it runs nothing yet.
func (sp *Spare) Discard() {
	sp.conn.Close()
	_ = sp.cmd.Process.Kill()
	_ = sp.cmd.Wait()
}

// Run has the spare run cmd, made by exec.Command with its Env set and
// its stdio files (or nil), inside the sandbox Take was given, as a cmd
// that Prepare prepared would run: the Setup is the same, and so is a
// StrictError. cmd itself is not started. On an error the spare is let
// go: it exits, and the caller waits for it.
func (sp *Spare) Run(cmd *exec.Cmd) (*Setup, error) {
	defer sp.conn.Close() // the order is all the spare gets
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	if cmd.Dir != "" {
		// Where exec.Cmd's Start would fail, so does this.
		if fi, err := os.Stat(cmd.Dir); err != nil || !fi.IsDir() {
			if err == nil {
				err = &os.PathError{Op: "chdir", Path: cmd.Dir, Err: syscall.ENOTDIR}
			}
			return nil, err
		}
	}
	files := make([]*os.File, 0, 3+len(cmd.ExtraFiles))
	for _, std := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		switch f := std.(type) {
		case nil:
			null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			if err != nil {
				return nil, err
			}
			defer null.Close()
			files = append(files, null)
		case *os.File:
			files = append(files, f)
		default:
			return nil, fmt.Errorf("sandbox: a spare's command needs files for its stdio, not %T", std)
		}
	}
	env, extra := cmd.Env, cmd.ExtraFiles // as they were, should the spare be gone
	pl, s, err := prepareDecided(cmd, sp.policy, sp.plan, sp.report)
	if err != nil {
		return s, err
	}
	files = append(files, cmd.ExtraFiles...)
	js, err := json.Marshal(order{Plan: pl, Program: cmd.Path, Args: cmd.Args[1:], Env: cmd.Env, Dir: cmd.Dir, Files: len(files)})
	if err == nil && len(js) > maxOrder {
		err = fmt.Errorf("sandbox: the command's arguments and environment are %d bytes, over %d", len(js), maxOrder)
	}
	if err != nil {
		s.Close()
		return s, err
	}
	if err := send(sp.conn, js, files); err != nil {
		s.Close()
		cmd.Env, cmd.ExtraFiles = env, extra
		return s, fmt.Errorf("%w: %v", ErrSpareGone, err)
	}
	return s, nil
}

// ErrSpareGone is Run's error when the spare could not be given its
// order (it has exited: killed while it waited): cmd is as it was, for
// Prepare.
var ErrSpareGone = errors.New("sandbox: the spare setup step is gone")

// send writes the order's length with the descriptors, then the order.
func send(conn *os.File, js []byte, files []*os.File) error {
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	head := binary.BigEndian.AppendUint32(nil, uint32(len(js)))
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), head, unix.UnixRights(fds...), nil, unix.MSG_NOSIGNAL)
		return serr != unix.EAGAIN
	}); err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	_, err = conn.Write(js)
	return err
}

// spareMain is a spare's life: it waits for its order and runs it as
// Main runs a plan. With no order (its socket closed), it exits.
func spareMain() (code int) {
	// As PID 1 of a namespace, it will pass signals on to the server:
	// catching them takes the runtime some milliseconds, spent now.
	var l *pid1.Listener
	if os.Getpid() == 1 {
		l = pid1.Listen()
	}
	o, err := receiveOrder()
	if errors.Is(err, io.EOF) {
		return 0 // let go before any order
	}
	if err == nil {
		err = o.apply()
	}
	if err == nil {
		err = run(o.Plan, o.Program, o.Args, l)
	}
	fmt.Fprintf(os.Stderr, "mcpgen: sandbox: %v\n", err)
	return 126
}

// receiveOrder reads the order and its descriptors from the spare's socket,
// and closes it.
func receiveOrder() (*order, error) {
	conn := os.NewFile(spareConn, "sandbox-spare")
	if _, err := conn.Write([]byte{spareReady}); err != nil {
		conn.Close()
		return nil, io.EOF // let go before it was ready
	}
	head := make([]byte, 4)
	oob := make([]byte, unix.CmsgSpace(4*64))
	var n, oobn int
	var err error
	for {
		n, oobn, _, _, err = unix.Recvmsg(spareConn, head, oob, unix.MSG_CMSG_CLOEXEC)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading the order: %v", err)
	}
	if n == 0 && oobn == 0 {
		return nil, io.EOF
	}
	var fds []int
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	for _, m := range msgs {
		if err == nil {
			var more []int
			more, err = unix.ParseUnixRights(&m)
			fds = append(fds, more...)
		}
	}
	if err == nil && n < len(head) {
		_, err = io.ReadFull(conn, head[n:])
	}
	var o order
	if err == nil {
		size := binary.BigEndian.Uint32(head)
		if size > maxOrder {
			err = fmt.Errorf("an order of %d bytes, over %d", size, maxOrder)
		} else {
			js := make([]byte, size)
			if _, err = io.ReadFull(conn, js); err == nil {
				err = json.Unmarshal(js, &o)
			}
		}
	}
	if err == nil && o.Files != len(fds) {
		err = fmt.Errorf("an order of %d files came with %d", o.Files, len(fds))
	}
	conn.Close() // before place, which may put a descriptor in its place
	if err == nil {
		err = place(fds)
	}
	if err != nil {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("reading the order: %v", err)
	}
	return &o, nil
}

// place makes fds this process's descriptors 0, 1, 2... in their order,
// open across exec, as exec.Cmd gives a child its stdio and ExtraFiles.
func place(fds []int) error {
	// First above every target, so that no move overwrites one still
	// to be moved.
	high := make([]int, len(fds))
	for i, fd := range fds {
		h, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, len(fds)+spareConn+1)
		if err != nil {
			return err
		}
		high[i] = h
		unix.Close(fd)
		fds[i] = h
	}
	for i, h := range high {
		if err := unix.Dup3(h, i, 0); err != nil {
			return err
		}
		unix.Close(h)
		fds[i] = i
	}
	return nil
}

// apply makes this process's environment and directory the command's.
func (o *order) apply() error {
	os.Clearenv()
	for _, kv := range o.Env {
		name, value, ok := cutEnv(kv)
		if ok {
			if err := os.Setenv(name, value); err != nil {
				return err
			}
		}
	}
	if o.Dir != "" {
		if err := os.Chdir(o.Dir); err != nil {
			return err
		}
	}
	return nil
}

// cutEnv splits NAME=value; a leading '=' belongs to the name (Windows'
// =C: style never reaches here, but a name is never empty).
func cutEnv(kv string) (name, value string, ok bool) {
	for i := 1; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return "", "", false
}
