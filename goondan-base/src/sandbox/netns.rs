//! The sandbox's side of its one way out (see `super::proxy`): inside the new network
//! namespace, the helper's outer stage brings loopback up, listens on the proxy's port and hands
//! the listening socket to the host's proxy over a Unix socket, then closes its own copy. Only
//! the host accepts on it; nothing inside forwards anything. (A warm sandbox makes a listener
//! for each call instead: see the `spawner` module.)

use std::io;
use std::mem::MaybeUninit;
use std::net::Ipv4Addr;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::Path;

use nix::libc;

use super::proxy::PORT;

/// Opens the way out for a process in a fresh network namespace whose loopback is up:
/// `127.0.0.1:3128` listening, the listener sent to the proxy at `socket`.
pub(crate) fn open_way_out(socket: &Path) -> Result<(), String> {
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, PORT))
        .map_err(|e| format!("listening on the proxy's port {PORT}: {e}"))?;
    let stream = UnixStream::connect(socket)
        .map_err(|e| format!("reaching the network proxy at {}: {e}", socket.display()))?;
    send_fd(&stream, b"L", &listener).map_err(|e| format!("handing the proxy its socket: {e}"))
}

/// Sends `data` (a few bytes) and `fd` over `stream`, the descriptor with `SCM_RIGHTS`.
pub(crate) fn send_fd(stream: &UnixStream, data: &[u8], fd: &impl AsFd) -> io::Result<()> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds = [fd.as_fd()];
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io::Error::other("no room for the descriptor"));
    }
    let sent = sendmsg(
        stream,
        &[io::IoSlice::new(data)],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    if sent != data.len() {
        return Err(io::Error::other("the message was cut short"));
    }
    Ok(())
}

/// Sets the loopback interface (index 1 in every network namespace) up, with one netlink
/// `RTM_NEWLINK` request, and reads the kernel's acknowledgement. The caller holds
/// `CAP_NET_ADMIN` in the namespace.
pub(crate) fn loopback_up() -> io::Result<()> {
    use rustix::net::netlink::SocketAddrNetlink;
    use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketType, recv, sendto, socket};
    const LOOPBACK_INDEX: i32 = 1;
    const HEADER: usize = 16;
    const MESSAGE: usize = HEADER + 16;
    let up = libc::IFF_UP.unsigned_abs();
    let mut message = Vec::with_capacity(MESSAGE);
    // struct nlmsghdr: length, type, flags, sequence, port id.
    message.extend_from_slice(&u32::try_from(MESSAGE).unwrap_or(0).to_ne_bytes());
    message.extend_from_slice(&libc::RTM_NEWLINK.to_ne_bytes());
    message.extend_from_slice(
        &u16::try_from(libc::NLM_F_REQUEST | libc::NLM_F_ACK)
            .unwrap_or(0)
            .to_ne_bytes(),
    );
    message.extend_from_slice(&1u32.to_ne_bytes());
    message.extend_from_slice(&0u32.to_ne_bytes());
    // struct ifinfomsg: family, padding, type, index, flags, change mask.
    message.extend_from_slice(&[0, 0, 0, 0]);
    message.extend_from_slice(&LOOPBACK_INDEX.to_ne_bytes());
    message.extend_from_slice(&up.to_ne_bytes());
    message.extend_from_slice(&up.to_ne_bytes());

    let netlink = socket(AddressFamily::NETLINK, SocketType::RAW, None)?;
    sendto(
        &netlink,
        &message,
        SendFlags::empty(),
        &SocketAddrNetlink::new(0, 0),
    )?;
    let mut reply = [0u8; 256];
    let (received, _) = recv(&netlink, &mut reply, RecvFlags::empty())?;
    acknowledged(&reply[..received.min(reply.len())])
}

/// The kernel's answer to a netlink request: an `NLMSG_ERROR` message whose code is 0.
fn acknowledged(reply: &[u8]) -> io::Result<()> {
    let field = |at: usize| reply.get(at..at + 4).and_then(|b| b.try_into().ok());
    let kind = reply
        .get(4..6)
        .and_then(|b| b.try_into().ok())
        .map(u16::from_ne_bytes);
    let code = field(16).map(i32::from_ne_bytes);
    match (kind, code) {
        (Some(kind), Some(0)) if i32::from(kind) == libc::NLMSG_ERROR => Ok(()),
        (Some(kind), Some(code)) if i32::from(kind) == libc::NLMSG_ERROR => {
            Err(io::Error::from_raw_os_error(code.saturating_neg()))
        }
        _ => Err(io::Error::other("the kernel's answer could not be read")),
    }
}
