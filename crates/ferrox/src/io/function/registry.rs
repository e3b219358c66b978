//! The table of exportable primitives: each kind's name in files, how to
//! describe one (its parameters as JSON) and how to build it again.
//!
//! Adding a primitive's export is an `impl Exportable` beside the primitive
//! (see [`crate::graph::export`]) and one line in [`table`]. A primitive
//! missing here is refused by name: "export of NAME is not supported".

use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::export::Exportable;
use crate::graph::primitive::Primitive;
use std::any::TypeId;
use std::collections::HashMap;
use std::sync::LazyLock;

/// One exportable kind.
struct Entry {
    kind: &'static str,
    describe: fn(&dyn Primitive) -> Option<Result<serde_json::Value>>,
    rebuild: fn(&serde_json::Value, &[Array]) -> Result<Vec<Array>>,
}

fn entry<T: Exportable>() -> (TypeId, Entry) {
    (
        TypeId::of::<T>(),
        Entry {
            kind: T::KIND,
            describe: |p| {
                p.as_any().downcast_ref::<T>().map(|t| {
                    serde_json::to_value(t)
                        .map_err(|e| Error::value("export_function", format!("{}: {e}", p.name())))
                })
            },
            rebuild: |params, inputs| {
                let op: T = serde_json::from_value(params.clone()).map_err(|e| {
                    Error::value(
                        "import_function",
                        format!("bad parameters for a {}: {e}", T::KIND),
                    )
                })?;
                op.rebuild_multi(inputs)
            },
        },
    )
}

/// Entries by type, and types by kind name.
type Table = (HashMap<TypeId, Entry>, HashMap<&'static str, TypeId>);

/// Every exportable kind, by type and by name.
fn table() -> &'static Table {
    use crate::ops;
    static TABLE: LazyLock<Table> = LazyLock::new(|| {
        let entries = [
            entry::<ops::unary::Unary>(),
            entry::<ops::binary::Binary>(),
            entry::<ops::binary::divmod::DivMod>(),
            entry::<ops::reduce::Reduce>(),
            entry::<ops::reduce::ArgReduce>(),
            entry::<ops::views::Reshape>(),
            entry::<ops::views::Transpose>(),
            entry::<ops::views::Broadcast>(),
            entry::<ops::views::BroadcastLike>(),
            entry::<ops::views::Slice>(),
            entry::<ops::views::Diagonal>(),
            entry::<ops::views::Contiguous>(),
            entry::<ops::cast::AsType>(),
            entry::<ops::cast::View>(),
            entry::<ops::matmul::Matmul>(),
            entry::<ops::matmul::AddMM>(),
            entry::<ops::softmax::Softmax>(),
            entry::<ops::softmax::LogSumExp>(),
            entry::<ops::select::Select>(),
            entry::<ops::join::Concatenate>(),
            entry::<ops::join::Pad>(),
            entry::<ops::join::Triangle>(),
            entry::<ops::join::DiagMatrix>(),
            entry::<ops::indexing::take::Take>(),
            entry::<ops::indexing::take::TakeAlongAxis>(),
            entry::<ops::indexing::put_along_axis::PutAlongAxis>(),
            entry::<ops::indexing::gather::Gather>(),
            entry::<ops::indexing::scatter::Scatter>(),
            entry::<ops::indexing::slice_update::SliceUpdate>(),
            entry::<ops::conv::Convolution>(),
            entry::<ops::quantized::QuantizedMatmul>(),
            entry::<ops::quantized::Dequantize>(),
            entry::<ops::scan::Scan>(),
            entry::<ops::sort::Sort>(),
            entry::<ops::search::SearchSorted>(),
            entry::<ops::nan_to_num::NanToNum>(),
            entry::<ops::closeness::IsClose>(),
            entry::<ops::fast::norm::RmsNorm>(),
            entry::<ops::fast::norm::LayerNorm>(),
            entry::<ops::fast::rope::Rope>(),
            entry::<ops::fast::attention::ScaledDotProductAttention>(),
            entry::<ops::fast::custom_kernel::KernelCall>(),
            entry::<crate::random::bits::RandomBits>(),
            entry::<crate::random::mlx_math::MlxMath>(),
        ];
        let by_name = entries.iter().map(|(t, e)| (e.kind, *t)).collect();
        (entries.into_iter().collect(), by_name)
    });
    &TABLE
}

/// The kind and parameters of `op`, or the error for a primitive without
/// an export.
pub(crate) fn describe(op: &dyn Primitive) -> Result<(&'static str, serde_json::Value)> {
    let unsupported = || {
        Error::unsupported(
            "export_function",
            format!("export of {} is not supported", op.name()),
        )
    };
    let e = table()
        .0
        .get(&<dyn std::any::Any>::type_id(op.as_any()))
        .ok_or_else(unsupported)?;
    let params = (e.describe)(op).ok_or_else(unsupported)??;
    Ok((e.kind, params))
}

/// The outputs of a `kind` node with `params` rebuilt on `inputs`.
pub(crate) fn rebuild(
    kind: &str,
    params: &serde_json::Value,
    inputs: &[Array],
) -> Result<Vec<Array>> {
    let (entries, by_name) = table();
    let e = by_name
        .get(kind)
        .and_then(|t| entries.get(t))
        .ok_or_else(|| {
            Error::unsupported(
                "import_function",
                format!("import of {kind:?} is not supported (an unknown primitive)"),
            )
        })?;
    (e.rebuild)(params, inputs)
}

/// Every kind in the table (for tests and docs).
pub(crate) fn kinds() -> Vec<&'static str> {
    let mut k: Vec<&'static str> = table().1.keys().copied().collect();
    k.sort_unstable();
    k
}
