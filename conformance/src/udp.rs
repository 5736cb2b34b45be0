//! UDP adapter (stub).
use crate::hdl::HdlAdapter as UdpAdapterInner;
/// UDP adapter.
pub type UdpAdapter = UdpAdapterInner;
impl UdpAdapterInner {
    /// New.
    pub fn new() -> Self { UdpAdapterInner }
}
