//! Analysis, the ground floor beside `units`: pure statistics over slices (`stats`), the decision
//! engine every verdict comes from (`decide`), named sets compared ministat-style (`sets`), the
//! effects of a campaign's dimensions (`effects`), ministat's rendering and input (`ministat`), RFC 6349's TCP
//! throughput metrics (`rfc6349`).
//! It imports no other layer; reports, which read the store, are a layer of their own above.

pub mod decide;
pub mod effects;
pub mod ministat;
pub mod rfc6349;
pub mod sets;
pub mod stats;
