//! TCP_NODELAY as the kernel has it on the sockets a client opened to the server (chapter 11): read
//! back with getsockopt, since what a client's source sets is not always what its socket ends up with.

use std::collections::BTreeSet;

/// This process's TCP sockets whose peer listens on `port` (by fd, from /proc/self/fd): what a
/// client opened to the server, told apart by comparing the sets before and after it connects.
pub fn sockets_to(port: u16) -> BTreeSet<i32> {
    let fds = std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .flatten();
    fds.filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&fd| peer_port(fd) == Some(port))
        .collect()
}

fn peer_port(fd: i32) -> Option<u16> {
    // SAFETY: getpeername writes at most `len` bytes into the zeroed storage it is given.
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    let ptr = &mut addr as *mut libc::sockaddr_storage as *mut libc::sockaddr;
    if unsafe { libc::getpeername(fd, ptr, &mut len) } != 0 {
        return None;
    }
    match addr.ss_family as i32 {
        // SAFETY: the family says which sockaddr the storage holds.
        libc::AF_INET => Some(u16::from_be(unsafe {
            (*(ptr as *const libc::sockaddr_in)).sin_port
        })),
        libc::AF_INET6 => Some(u16::from_be(unsafe {
            (*(ptr as *const libc::sockaddr_in6)).sin6_port
        })),
        _ => None,
    }
}

/// TCP_NODELAY as the kernel has it (getsockopt) on the sockets to `port` opened since `before`
/// (sockets_to's answer then): "on", "off", "mixed", or "no socket" when none was opened.
pub fn nodelay_since(port: u16, before: &BTreeSet<i32>) -> String {
    nodelay_of(&sockets_to(port).difference(before).copied().collect())
}

fn nodelay_of(fds: &BTreeSet<i32>) -> String {
    let each: BTreeSet<bool> = fds
        .iter()
        .filter_map(|&fd| {
            let (mut on, mut len) = (
                0 as libc::c_int,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
            let ptr = &mut on as *mut libc::c_int as *mut libc::c_void;
            // SAFETY: getsockopt writes at most `len` bytes into the int it is given.
            let got = unsafe {
                libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, ptr, &mut len)
            };
            (got == 0).then_some(on != 0)
        })
        .collect();
    match (each.contains(&true), each.contains(&false)) {
        (true, true) => "mixed",
        (true, false) => "on",
        (false, true) => "off",
        _ => "no socket",
    }
    .to_string()
}
