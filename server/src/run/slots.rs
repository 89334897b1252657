//! The session slots of `server run`: how many sessions each address holds, and in total.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The address a client's sessions count against: an IPv4 address (an IPv4-mapped IPv6
/// one taken as IPv4), or an IPv6 address's /64 (a host is given a /64 and may use any
/// address in it, so counting each address would let one host open `max_clients`).
pub(super) fn address_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !u128::from(u64::MAX)).into()),
        },
    }
}

/// Sessions per address and in total.
#[derive(Default)]
pub(super) struct Slots {
    pub(super) per_ip: HashMap<IpAddr, u32>,
    pub(super) total: u32,
}

/// Releases a session's slot when the session ends, however it ends.
pub(super) struct SlotGuard {
    pub(super) slots: Arc<Mutex<Slots>>,
    pub(super) ip: IpAddr,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        let mut slots = self
            .slots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        slots.total = slots.total.saturating_sub(1);
        if let Some(count) = slots.per_ip.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                slots.per_ip.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::address_of;

    /// Sessions count per IPv4 address and per IPv6 /64; an IPv4-mapped IPv6 address
    /// counts as its IPv4 one.
    #[test]
    fn sessions_count_per_ipv4_address_and_per_ipv6_64() {
        let of = |text: &str| address_of(text.parse::<IpAddr>().unwrap());
        assert_eq!(of("203.0.113.7"), of("203.0.113.7"));
        assert_ne!(of("203.0.113.7"), of("203.0.113.8"));
        assert_eq!(of("::ffff:203.0.113.7"), of("203.0.113.7"));
        assert_eq!(
            of("2001:db8:1:2::1"),
            of("2001:db8:1:2:ffff:ffff:ffff:ffff")
        );
        assert_eq!(
            of("2001:db8:1:2::1"),
            "2001:db8:1:2::".parse::<IpAddr>().unwrap()
        );
        assert_ne!(of("2001:db8:1:2::1"), of("2001:db8:1:3::1"));
        assert_ne!(of("::1"), of("127.0.0.1"));
    }
}
