//! Arrays for users: constructors from host data, reading values back,
//! and printing. The [`Array`] handle itself and the node behind it live in
//! [`crate::graph`]; this layer adds what needs storage, evaluation or
//! formatting.

mod constructors;
mod convert;
mod display;

pub use display::{print_precision, set_print_precision};

// Public paths kept for the bindings and users: the graph's array types
// seen from `ferrox::array`.
pub use crate::graph::array::Array;
pub use crate::graph::layout::{Data, for_each_offset, is_row_contiguous, row_major_strides};
