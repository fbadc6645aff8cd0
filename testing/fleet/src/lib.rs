//! Mixed fleets: kube-elector beside client-go's leader election on one Lease.
//!
//! - [`line`](mod@line): the line each peer prints per event, the same from both;
//! - the binary `elector-peer`: a kube-elector candidate that prints them (its
//!   client-go counterpart is `testing/client-go-peer`, built by
//!   `testing/k8s-server/build.sh`);
//! - [`peer`]: a running peer process of either library, its lines collected;
//! - [`judge`]: overlap judged from the peers' lines and from the Lease's
//!   history as the API server stored it;
//! - [`harness`]: a fleet of both on the real kube-apiserver, judged at the
//!   end (its requests, as the API server's audit log counts them, are
//!   `test_kit::apiserver::ApiServer::audit_requests`).

pub mod harness;
pub mod judge;
pub mod line;
pub mod peer;
