//go:build linux

package link

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dualforce/dualforce/hw/proto"
)

// closeCheckInterval bounds how long a blocked ReadFrame takes to notice Close: a packet socket
// cannot be woken from recvfrom by another thread, so reads wait in slices this long at most.
// Read timeouts up to this long (every control-loop timeout) cost one recvfrom and no extra
// syscall.
const closeCheckInterval = 20 * time.Millisecond

// socketPriority is TC_PRIO_CONTROL: the default queueing discipline sends such frames ahead of
// bulk traffic. Values above 6 need CAP_NET_RAW, which a raw socket has anyway.
const socketPriority = 7

// Ethernet is a raw AF_PACKET socket bound to one interface, moving frames of EtherType 0x88B5
// only: the kernel drops every other EtherType before it reaches us, and frames other sockets
// of this host send on the interface are not read back. Writes go out as given; the frame's
// destination (broadcast for the master board) and source are the caller's.
//
// It uses blocking recvfrom and write system calls, not Go's netpoller: a thread sleeps in the
// kernel until the frame arrives, which halves the median round trip and cuts the p99 tenfold.
// For the best latency run the receive loop on a goroutine that called runtime.LockOSThread, so
// the woken thread is the one that runs the loop, and keep that goroutine busy with nothing else.
//
// Read timeouts use SO_RCVTIMEO, which the kernel rounds up to its clock tick (1 to 4 ms).
// Opening needs CAP_NET_RAW (see ErrNotPermitted).
type Ethernet struct {
	ifname string
	local  proto.MAC

	// mu is held shared by every call using fd and exclusively by Close, so the descriptor is
	// never closed (and its number reused) under a blocked recvfrom.
	mu     sync.RWMutex
	fd     int
	closed atomic.Bool

	readMu        sync.Mutex    // one reader at a time; guards kernelTimeout
	kernelTimeout time.Duration // SO_RCVTIMEO currently set on fd
	timeout       atomic.Int64  // time.Duration asked for by SetReadTimeout
	spin          atomic.Int64  // time.Duration of polling before a blocking receive (SetSpin)
}

// OpenEthernet opens a raw socket on the network interface ifname (e.g. "enp3s0"). The socket
// belongs to the network namespace of the calling thread.
func OpenEthernet(ifname string) (*Ethernet, error) {
	// Protocol 0 receives nothing until bind, so no frame of another interface slips in first.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("%w: raw Ethernet on %q needs CAP_NET_RAW; grant it once with "+
				"`sudo setcap cap_net_raw+ep <binary>` (or run as root): %w", ErrNotPermitted, ifname, err)
		}
		return nil, fmt.Errorf("link: open raw socket for %q: %w", ifname, err)
	}
	e := &Ethernet{ifname: ifname, fd: fd}
	if err := e.setup(); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return e, nil
}

func (e *Ethernet) setup() error {
	ifr, err := unix.NewIfreq(e.ifname)
	if err != nil {
		return fmt.Errorf("link: bad interface name %q: %w", e.ifname, err)
	}
	if err := unix.IoctlIfreq(e.fd, unix.SIOCGIFINDEX, ifr); err != nil {
		if errors.Is(err, unix.ENODEV) {
			return fmt.Errorf("link: no network interface named %q in this network namespace (see `ip link`): %w", e.ifname, err)
		}
		return fmt.Errorf("link: look up interface %q: %w", e.ifname, err)
	}
	// A socket bound to one EtherType is not fed the host's outgoing frames in the first place
	// (the kernel copies those only to ETH_P_ALL sockets, like the C SDK's), so this option is a
	// second guard and kernels older than 4.20, which lack it, lose nothing.
	err = unix.SetsockoptInt(e.fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	if err != nil && !errors.Is(err, unix.ENOPROTOOPT) {
		return fmt.Errorf("link: PACKET_IGNORE_OUTGOING on %q: %w", e.ifname, err)
	}
	if err := unix.SetsockoptInt(e.fd, unix.SOL_SOCKET, unix.SO_PRIORITY, socketPriority); err != nil {
		return fmt.Errorf("link: SO_PRIORITY %d on %q: %w", socketPriority, e.ifname, err)
	}
	if err := e.setKernelTimeout(closeCheckInterval); err != nil {
		return err
	}
	// The first SIOCGSTAMPNS turns on the kernel's receive timestamps for the socket (and answers
	// ENOENT, having none yet): from then on every frame is stamped when it reaches the host.
	if _, err := e.stamp(); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("link: receive timestamps on %q: %w", e.ifname, err)
	}
	sll := &unix.SockaddrLinklayer{Protocol: htons(proto.EtherType), Ifindex: int(ifr.Uint32())}
	if err := unix.Bind(e.fd, sll); err != nil {
		return fmt.Errorf("link: bind raw socket to %q: %w", e.ifname, err)
	}
	sa, err := unix.Getsockname(e.fd)
	if err != nil {
		return fmt.Errorf("link: address of %q: %w", e.ifname, err)
	}
	bound, ok := sa.(*unix.SockaddrLinklayer)
	if !ok || bound.Hatype != unix.ARPHRD_ETHER || bound.Halen != uint8(len(e.local)) {
		return fmt.Errorf("link: interface %q is not an Ethernet interface", e.ifname)
	}
	copy(e.local[:], bound.Addr[:])
	return nil
}

// LocalMAC is the hardware address of the interface, the source address our frames should carry.
func (e *Ethernet) LocalMAC() proto.MAC { return e.local }

// Interface is the name of the interface the socket is bound to.
func (e *Ethernet) Interface() string { return e.ifname }

// WriteFrame sends frame, header included, out of the interface.
func (e *Ethernet) WriteFrame(frame []byte) error {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed.Load() {
		return ErrClosed
	}
	if err := checkFrameLength(frame); err != nil {
		return err
	}
	// The socket is bound, so a plain write goes to its interface with no address to build.
	if _, err := unix.Write(e.fd, frame); err != nil {
		return fmt.Errorf("link: send on %q: %w", e.ifname, err)
	}
	return nil
}

// ReadFrame waits for the next 0x88B5 frame that arrives on the interface.
func (e *Ethernet) ReadFrame(buf []byte) (int, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	e.readMu.Lock()
	defer e.readMu.Unlock()
	if e.closed.Load() {
		return 0, ErrClosed
	}
	if spin := time.Duration(e.spin.Load()); spin > 0 {
		if n, ok, err := e.poll(buf, spin); ok || err != nil {
			return n, err
		}
	}
	timeout := time.Duration(e.timeout.Load())
	slice := closeCheckInterval
	if timeout > 0 {
		slice = min(timeout, closeCheckInterval)
	}
	start := time.Now()
	for first := true; ; first = false {
		wait := slice
		if timeout > 0 && !first {
			wait = min(slice, timeout-time.Since(start))
			if wait < time.Microsecond {
				return 0, ErrTimeout
			}
		}
		if wait != e.kernelTimeout {
			if err := e.setKernelTimeout(wait); err != nil {
				return 0, err
			}
		}
		n, errno := recvfrom(e.fd, buf, unix.MSG_TRUNC)
		switch errno {
		case 0:
		case unix.EAGAIN, unix.EINTR:
			if e.closed.Load() {
				return 0, ErrClosed
			}
			continue
		default:
			return 0, fmt.Errorf("link: receive on %q: %w", e.ifname, errno)
		}
		if n > len(buf) {
			return 0, shortBufferError(n, len(buf))
		}
		return n, nil
	}
}

// LastArrival is when the frame the last ReadFrame returned reached this host: the kernel's
// receive timestamp, taken before any thread of ours ran. The time from it to the return of
// ReadFrame is how long the frame waited for its reader, so a control loop can tell a frame the
// board sent late from one it took late. Call it from the reading goroutine after ReadFrame.
func (e *Ethernet) LastArrival() (time.Time, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed.Load() {
		return time.Time{}, ErrClosed
	}
	return e.stamp()
}

// stamp asks the kernel for the receive timestamp of the socket's last frame (SIOCGSTAMPNS).
func (e *Ethernet) stamp() (time.Time, error) {
	var ts unix.Timespec
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(e.fd), unix.SIOCGSTAMPNS, uintptr(unsafe.Pointer(&ts))); errno != 0 {
		return time.Time{}, fmt.Errorf("link: receive timestamp on %q: %w", e.ifname, errno)
	}
	return time.Unix(ts.Unix()), nil
}

// SetSpin makes ReadFrame poll the socket without sleeping for up to d before it blocks; 0 (the
// default) blocks at once. A blocked thread is woken by the kernel, which on a virtual machine
// can take tens of microseconds when the wake-up crosses CPUs; polling trades a core's time for
// that tail. Spend it only where a frame is due within d (the 1 kHz loop's next packet).
func (e *Ethernet) SetSpin(d time.Duration) { e.spin.Store(int64(max(d, 0))) }

// poll is ReadFrame's spinning phase: ok reports a frame (or an error) within d.
func (e *Ethernet) poll(buf []byte, d time.Duration) (n int, ok bool, err error) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		n, errno := recvfrom(e.fd, buf, unix.MSG_TRUNC|unix.MSG_DONTWAIT)
		switch errno {
		case 0:
			if n > len(buf) {
				return 0, true, shortBufferError(n, len(buf))
			}
			return n, true, nil
		case unix.EAGAIN, unix.EINTR:
			if e.closed.Load() {
				return 0, true, ErrClosed
			}
		default:
			return 0, true, fmt.Errorf("link: receive on %q: %w", e.ifname, errno)
		}
	}
	return 0, false, nil
}

// SetReadTimeout sets how long ReadFrame waits for a frame; zero waits forever.
func (e *Ethernet) SetReadTimeout(d time.Duration) error {
	if e.closed.Load() {
		return ErrClosed
	}
	if err := checkTimeout(d); err != nil {
		return err
	}
	e.timeout.Store(int64(d))
	return nil
}

// Close closes the socket. A ReadFrame blocked in the kernel notices within closeCheckInterval
// and returns ErrClosed; Close waits for it, so the socket is gone when Close returns.
func (e *Ethernet) Close() error {
	if e.closed.Swap(true) {
		return ErrClosed
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := unix.Close(e.fd); err != nil {
		return fmt.Errorf("link: close raw socket on %q: %w", e.ifname, err)
	}
	return nil
}

func (e *Ethernet) setKernelTimeout(d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds()) // rounds up, so never the zero that means forever
	if err := unix.SetsockoptTimeval(e.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("link: SO_RCVTIMEO on %q: %w", e.ifname, err)
	}
	e.kernelTimeout = d
	return nil
}

// recvfrom receives one frame into buf without asking for the sender's address, which
// unix.Recvfrom would allocate. With MSG_TRUNC it returns the frame's full length even when buf
// was too short.
func recvfrom(fd int, buf []byte, flags int) (int, unix.Errno) {
	n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd),
		uintptr(unsafe.Pointer(unsafe.SliceData(buf))), uintptr(len(buf)), uintptr(flags), 0, 0)
	return int(n), errno
}

// htons turns v into network byte order, as sockaddr_ll wants its protocol.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}
