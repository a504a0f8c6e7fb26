//! Which processes own the listening socket of a port (Linux `/proc`): readiness only
//! counts when the server that answers is the one we started, not a stranger that took
//! the port between our check and the server's bind.

use std::collections::BTreeSet;

use crate::group::group_members;

/// Socket inodes listening on `port` (any local address, IPv4 and IPv6); `None` when the
/// kernel tables cannot be read (then ownership cannot be told).
fn listening_inodes(port: u16) -> Option<BTreeSet<u64>> {
    let mut inodes = BTreeSet::new();
    let mut readable = false;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        readable = true;
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
            let (Some(local), Some(state), Some(inode)) = (f.get(1), f.get(3), f.get(9)) else {
                continue;
            };
            let local_port = local
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if *state == "0A"
                && local_port == Some(port)
                && let Ok(i) = inode.parse()
            {
                inodes.insert(i);
            }
        }
    }
    readable.then_some(inodes)
}

/// Whether a live member of process group `pgid` holds a socket listening on `port`.
/// `None` when that cannot be determined (no `/proc/net` tables, or nobody listens).
pub(crate) fn group_owns_listener(pgid: i32, port: u16) -> Option<bool> {
    let inodes = listening_inodes(port)?;
    if inodes.is_empty() {
        return None;
    }
    let owned = group_members(pgid).into_iter().any(|pid| {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        fds.flatten().any(|fd| {
            let target = std::fs::read_link(fd.path()).unwrap_or_default();
            let t = target.to_string_lossy();
            t.strip_prefix("socket:[")
                .and_then(|r| r.strip_suffix(']'))
                .and_then(|i| i.parse::<u64>().ok())
                .is_some_and(|i| inodes.contains(&i))
        })
    });
    Some(owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_listener_is_recognised() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let me = nix::unistd::getpgrp().as_raw();
        assert_eq!(group_owns_listener(me, port), Some(true));
        // A group that does not exist owns nothing.
        assert_eq!(group_owns_listener(i32::MAX - 7, port), Some(false));
        drop(l);
        assert_eq!(group_owns_listener(me, port), None);
    }
}
