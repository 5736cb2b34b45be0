//! Thin, safe wrappers around the Linux socket calls the runtime needs: non-blocking UDP
//! sockets with large buffers, `recvmmsg` with the IP TOS/TTL of every datagram, `sendmmsg`
//! with a per-datagram TOS/TTL, and `ppoll` with a nanosecond timeout.
//!
//! Every `unsafe` block is here; the pointers handed to the kernel always point into buffers
//! owned by the batch structures and are rebuilt right before each call.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Bytes of ancillary data reserved per datagram (room for IP_TOS and IP_TTL).
const CTRL_LEN: usize = 64;

/// A bound, non-blocking UDP socket.
#[derive(Debug)]
pub struct Sock {
    fd: OwnedFd,
    /// Address it is bound to.
    pub local: SocketAddrV4,
}

fn setsockopt_int(fd: RawFd, level: libc::c_int, name: libc::c_int, val: libc::c_int) -> io::Result<()> {
    // SAFETY: `val` lives across the call and its size is passed.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &val as *const libc::c_int as *const libc::c_void,
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

impl Sock {
    /// Bind a non-blocking UDP socket to `addr` with the given buffer sizes (the `*FORCE`
    /// options are tried first, so root gets the full size past `rmem_max`). `recv_meta`
    /// asks the kernel for each datagram's TOS and TTL.
    pub fn bind(addr: SocketAddrV4, rcvbuf: usize, sndbuf: usize, recv_meta: bool) -> io::Result<Sock> {
        let s = UdpSocket::bind(addr)?;
        s.set_nonblocking(true)?;
        let fd: OwnedFd = s.into();
        let raw = fd.as_raw_fd();
        for (force, plain, size) in [
            (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF, rcvbuf),
            (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF, sndbuf),
        ] {
            if size == 0 {
                continue;
            }
            let v = size.min(i32::MAX as usize / 2) as libc::c_int;
            if setsockopt_int(raw, libc::SOL_SOCKET, force, v).is_err() {
                let _ = setsockopt_int(raw, libc::SOL_SOCKET, plain, v);
            }
        }
        if recv_meta {
            setsockopt_int(raw, libc::IPPROTO_IP, libc::IP_RECVTOS, 1)?;
            setsockopt_int(raw, libc::IPPROTO_IP, libc::IP_RECVTTL, 1)?;
        }
        // Never fragment: a datagram larger than the path MTU is an error, not fragments
        // (which per-packet loss rules and ECMP could not see).
        let _ = setsockopt_int(raw, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER, libc::IP_PMTUDISC_PROBE);
        let local = match UdpSocket::from(fd.try_clone()?).local_addr()? {
            std::net::SocketAddr::V4(a) => a,
            std::net::SocketAddr::V6(_) => return Err(io::Error::other("bound an IPv6 address")),
        };
        Ok(Sock { fd, local })
    }

    /// Raw descriptor.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Send one datagram (control replies off the hot path). `Ok(false)` when it would block.
    pub fn send_to(&self, buf: &[u8], to: SocketAddrV4) -> io::Result<bool> {
        let sa = sockaddr(to);
        // SAFETY: buffer and address are valid for the call.
        let r = unsafe {
            libc::sendto(
                self.raw(),
                buf.as_ptr() as *const libc::c_void,
                buf.len(),
                libc::MSG_DONTWAIT,
                &sa as *const libc::sockaddr_in as *const libc::sockaddr,
                size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if r >= 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::WouldBlock {
            Ok(false)
        } else {
            Err(e)
        }
    }

    /// Receive one datagram if one is waiting.
    pub fn try_recv(&self, buf: &mut [u8]) -> io::Result<Option<(usize, SocketAddrV4)>> {
        // SAFETY: zeroed sockaddr_in is a valid value; pointers are valid for the call.
        let mut sa: libc::sockaddr_in = unsafe { zeroed() };
        let mut sl = size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let r = unsafe {
            libc::recvfrom(
                self.raw(),
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                libc::MSG_DONTWAIT,
                &mut sa as *mut libc::sockaddr_in as *mut libc::sockaddr,
                &mut sl,
            )
        };
        if r >= 0 {
            return Ok(Some((r as usize, from_sockaddr(&sa))));
        }
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::WouldBlock {
            Ok(None)
        } else {
            Err(e)
        }
    }
}

/// A `sockaddr_in` for an IPv4 socket address.
pub fn sockaddr(a: SocketAddrV4) -> libc::sockaddr_in {
    // SAFETY: all-zero is a valid sockaddr_in.
    let mut sa: libc::sockaddr_in = unsafe { zeroed() };
    sa.sin_family = libc::AF_INET as libc::sa_family_t;
    sa.sin_port = a.port().to_be();
    sa.sin_addr = libc::in_addr {
        s_addr: u32::from_ne_bytes(a.ip().octets()),
    };
    sa
}

fn from_sockaddr(sa: &libc::sockaddr_in) -> SocketAddrV4 {
    SocketAddrV4::new(
        Ipv4Addr::from(sa.sin_addr.s_addr.to_ne_bytes()),
        u16::from_be(sa.sin_port),
    )
}

/// One received datagram of an [`RxBatch`].
#[derive(Debug, Clone, Copy)]
pub struct RxMeta {
    /// Sender's address.
    pub from: SocketAddrV4,
    /// Datagram length (bytes at the slot's `headroom`).
    pub len: usize,
    /// The datagram did not fit its slot and was cut.
    pub truncated: bool,
    /// IPv4 TOS byte (DSCP << 2 | ECN), when the kernel reported it.
    pub tos: Option<u8>,
    /// IPv4 TTL, when the kernel reported it.
    pub ttl: Option<u8>,
}

/// Buffers and headers for one `recvmmsg` call. Datagram `i` lands at
/// `slot(i)[headroom..]`, leaving `headroom` bytes in front for the caller to rebuild the
/// Ethernet/IPv4/UDP headers in place.
pub struct RxBatch {
    slot_len: usize,
    headroom: usize,
    bufs: Vec<u8>,
    hdrs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
    names: Vec<libc::sockaddr_in>,
    ctrl: Vec<[u8; CTRL_LEN]>,
    meta: Vec<RxMeta>,
}

impl RxBatch {
    /// `n` slots of `headroom + max_datagram` bytes.
    pub fn new(n: usize, headroom: usize, max_datagram: usize) -> Self {
        let slot_len = headroom + max_datagram;
        RxBatch {
            slot_len,
            headroom,
            bufs: vec![0; n * slot_len],
            // SAFETY: all-zero mmsghdr/iovec/sockaddr_in are valid (null pointers, zero lengths).
            hdrs: (0..n).map(|_| unsafe { zeroed() }).collect(),
            iovs: (0..n).map(|_| unsafe { zeroed() }).collect(),
            names: (0..n).map(|_| unsafe { zeroed() }).collect(),
            ctrl: vec![[0; CTRL_LEN]; n],
            meta: Vec::with_capacity(n),
        }
    }

    /// Number of slots.
    pub fn capacity(&self) -> usize {
        self.hdrs.len()
    }

    /// Receive up to `capacity` datagrams without blocking; returns how many arrived.
    pub fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        let n = self.capacity();
        let base = self.bufs.as_mut_ptr();
        for i in 0..n {
            // SAFETY: i * slot_len + headroom < bufs.len(); the slot has max_datagram bytes.
            self.iovs[i] = libc::iovec {
                iov_base: unsafe { base.add(i * self.slot_len + self.headroom) } as *mut libc::c_void,
                iov_len: self.slot_len - self.headroom,
            };
            let h = &mut self.hdrs[i].msg_hdr;
            h.msg_name = &mut self.names[i] as *mut libc::sockaddr_in as *mut libc::c_void;
            h.msg_namelen = size_of::<libc::sockaddr_in>() as libc::socklen_t;
            h.msg_iov = &mut self.iovs[i];
            h.msg_iovlen = 1;
            h.msg_control = self.ctrl[i].as_mut_ptr() as *mut libc::c_void;
            h.msg_controllen = CTRL_LEN as _;
            h.msg_flags = 0;
            self.hdrs[i].msg_len = 0;
        }
        // SAFETY: every header points into buffers owned by `self`, valid for the call.
        let r = unsafe {
            libc::recvmmsg(
                fd,
                self.hdrs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        self.meta.clear();
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::WouldBlock {
                Ok(0)
            } else {
                Err(e)
            };
        }
        let got = r as usize;
        for i in 0..got {
            let h = &self.hdrs[i];
            let (tos, ttl) = parse_ctrl(&h.msg_hdr);
            self.meta.push(RxMeta {
                from: from_sockaddr(&self.names[i]),
                len: h.msg_len as usize,
                truncated: h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
                tos,
                ttl,
            });
        }
        Ok(got)
    }

    /// Metadata of datagram `i` of the last call.
    pub fn meta(&self, i: usize) -> RxMeta {
        self.meta[i]
    }

    /// Whole slot `i` (headroom included).
    pub fn slot_mut(&mut self, i: usize) -> &mut [u8] {
        &mut self.bufs[i * self.slot_len..(i + 1) * self.slot_len]
    }
}

fn parse_ctrl(h: &libc::msghdr) -> (Option<u8>, Option<u8>) {
    let (mut tos, mut ttl) = (None, None);
    // SAFETY: the kernel filled msg_control/msg_controllen; the CMSG macros stay inside it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            let d = libc::CMSG_DATA(c);
            if (*c).cmsg_level == libc::IPPROTO_IP {
                match (*c).cmsg_type {
                    libc::IP_TOS => tos = Some(*d),
                    libc::IP_TTL => ttl = Some(*(d as *const libc::c_int) as u8),
                    _ => {}
                }
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    (tos, ttl)
}

/// One datagram queued in a [`TxBatch`].
#[derive(Debug, Clone, Copy)]
struct TxItem {
    /// Index of the caller's socket.
    sock: u32,
    /// Byte range of the datagram inside its buffer.
    start: u32,
    len: u32,
    to: SocketAddrV4,
    tos: u8,
    ttl: u8,
}

/// Outcome of [`TxBatch::flush`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FlushStats {
    /// Datagrams the kernel accepted.
    pub sent: u64,
    /// Datagrams dropped after the socket stayed full for the wait limit.
    pub dropped_full: u64,
    /// Datagrams dropped on another send error (e.g. no route).
    pub dropped_error: u64,
    /// `sendmmsg` calls made.
    pub calls: u64,
    /// Times a socket was full and the flush waited for it.
    pub waits: u64,
}

/// Frame buffers plus the headers of one batched send. Frames are written by the caller into
/// [`TxBatch::buf_mut`]; [`TxBatch::push`] queues a byte range of it for a socket; `flush`
/// sends every queued datagram with one `sendmmsg` per socket (datagrams of one socket keep
/// their order).
pub struct TxBatch {
    buf_len: usize,
    bufs: Vec<u8>,
    items: Vec<TxItem>,
    order: Vec<u32>,
    hdrs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
    names: Vec<libc::sockaddr_in>,
    ctrl: Vec<[u8; CTRL_LEN]>,
}

impl TxBatch {
    /// `n` buffers of `buf_len` bytes.
    pub fn new(n: usize, buf_len: usize) -> Self {
        TxBatch {
            buf_len,
            bufs: vec![0; n * buf_len],
            items: Vec::with_capacity(n),
            order: Vec::with_capacity(n),
            // SAFETY: all-zero values are valid for these C structs.
            hdrs: (0..n).map(|_| unsafe { zeroed() }).collect(),
            iovs: (0..n).map(|_| unsafe { zeroed() }).collect(),
            names: (0..n).map(|_| unsafe { zeroed() }).collect(),
            ctrl: vec![[0; CTRL_LEN]; n],
        }
    }

    /// Queued datagrams.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Nothing queued.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The batch is full.
    pub fn is_full(&self) -> bool {
        self.items.len() == self.hdrs.len()
    }

    /// The buffer the next pushed datagram must be written into.
    pub fn buf_mut(&mut self) -> &mut [u8] {
        let i = self.items.len();
        &mut self.bufs[i * self.buf_len..(i + 1) * self.buf_len]
    }

    /// Queue `buf_mut()[start..start + len]` for socket index `sock`, to `to`.
    pub fn push(&mut self, sock: u32, start: usize, len: usize, to: SocketAddrV4, tos: u8, ttl: u8) {
        debug_assert!(!self.is_full() && start + len <= self.buf_len);
        self.items.push(TxItem {
            sock,
            start: start as u32,
            len: len as u32,
            to,
            tos,
            ttl,
        });
    }

    /// Drop every queued datagram.
    pub fn clear(&mut self) {
        self.items.clear();
    }

    /// Send everything queued; `fd_of(sock)` gives the descriptor of a socket index. A full
    /// socket is waited for up to `full_wait`, after which its remaining datagrams are dropped
    /// (the transport recovers them like any loss).
    pub fn flush(&mut self, fd_of: &dyn Fn(u32) -> RawFd, full_wait: Duration) -> FlushStats {
        let mut st = FlushStats::default();
        let n = self.items.len();
        if n == 0 {
            return st;
        }
        self.order.clear();
        self.order.extend(0..n as u32);
        let items = &self.items;
        self.order.sort_by_key(|&i| items[i as usize].sock); // stable: per-socket order kept
        let base = self.bufs.as_mut_ptr();
        for (k, &i) in self.order.iter().enumerate() {
            let it = self.items[i as usize];
            // SAFETY: the range lies inside buffer i (checked by push).
            self.iovs[k] = libc::iovec {
                iov_base: unsafe { base.add(i as usize * self.buf_len + it.start as usize) } as *mut libc::c_void,
                iov_len: it.len as usize,
            };
            self.names[k] = sockaddr(it.to);
            let ctrl = &mut self.ctrl[k];
            let h = &mut self.hdrs[k].msg_hdr;
            h.msg_name = &mut self.names[k] as *mut libc::sockaddr_in as *mut libc::c_void;
            h.msg_namelen = size_of::<libc::sockaddr_in>() as libc::socklen_t;
            h.msg_iov = &mut self.iovs[k];
            h.msg_iovlen = 1;
            h.msg_control = ctrl.as_mut_ptr() as *mut libc::c_void;
            h.msg_flags = 0;
            // SAFETY: CMSG_SPACE(int) * 2 <= CTRL_LEN; the macros stay inside `ctrl`.
            unsafe {
                let sp = libc::CMSG_SPACE(size_of::<libc::c_int>() as u32) as usize;
                h.msg_controllen = (2 * sp) as _;
                let c = libc::CMSG_FIRSTHDR(h);
                (*c).cmsg_level = libc::IPPROTO_IP;
                (*c).cmsg_type = libc::IP_TOS;
                (*c).cmsg_len = libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as _;
                *(libc::CMSG_DATA(c) as *mut libc::c_int) = libc::c_int::from(it.tos);
                let c2 = libc::CMSG_NXTHDR(h, c);
                (*c2).cmsg_level = libc::IPPROTO_IP;
                (*c2).cmsg_type = libc::IP_TTL;
                (*c2).cmsg_len = libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as _;
                *(libc::CMSG_DATA(c2) as *mut libc::c_int) = libc::c_int::from(it.ttl.max(1));
            }
        }
        let mut k = 0;
        while k < n {
            let sock = self.items[self.order[k] as usize].sock;
            let mut end = k + 1;
            while end < n && self.items[self.order[end] as usize].sock == sock {
                end += 1;
            }
            let fd = fd_of(sock);
            let mut waited = false;
            while k < end {
                st.calls += 1;
                // SAFETY: headers k..end point into buffers owned by `self`.
                let r = unsafe {
                    libc::sendmmsg(
                        fd,
                        self.hdrs.as_mut_ptr().add(k),
                        (end - k) as libc::c_uint,
                        libc::MSG_DONTWAIT,
                    )
                };
                if r > 0 {
                    st.sent += r as u64;
                    k += r as usize;
                    continue;
                }
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::WouldBlock if !waited => {
                        st.waits += 1;
                        waited = true;
                        let _ = wait_fds(&[fd], libc::POLLOUT, Some(full_wait));
                    }
                    io::ErrorKind::WouldBlock => {
                        st.dropped_full += (end - k) as u64;
                        k = end;
                    }
                    io::ErrorKind::Interrupted => {}
                    _ => {
                        // The first datagram failed (no route, message too long, ...): drop it
                        // and go on with the rest.
                        st.dropped_error += 1;
                        k += 1;
                    }
                }
            }
        }
        self.items.clear();
        st
    }
}

/// Wait until one of `fds` has `events` or `timeout` passes (`None` = forever). Returns
/// whether a descriptor is ready.
pub fn wait_fds(fds: &[RawFd], events: libc::c_short, timeout: Option<Duration>) -> io::Result<bool> {
    let mut p: Vec<libc::pollfd> = fds.iter().map(|&fd| libc::pollfd { fd, events, revents: 0 }).collect();
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let tp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `p` and `ts` are valid for the call; a null sigmask keeps the current one.
    let r = unsafe { libc::ppoll(p.as_mut_ptr(), p.len() as libc::nfds_t, tp, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(r > 0)
}

/// Ask for 1 ns timer slack, so short `ppoll` timeouts are not rounded up by 50 µs.
pub fn tight_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer argument; failure is harmless.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Run the calling process under SCHED_FIFO at `priority` (1..=99). A busy-polling runtime
/// then keeps its CPU while a build runs next to it; it still sleeps in `ppoll` when idle.
pub fn set_realtime(priority: u8) -> io::Result<()> {
    let p = libc::sched_param {
        sched_priority: libc::c_int::from(priority.clamp(1, 99)),
    };
    // SAFETY: plain syscall on the calling process with a valid parameter block.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
