//! Nested structures of arrays ("trees"): arrays, vectors, tuples, options
//! and ordered maps of trees, flattened to the slices that transforms take
//! and rebuilt afterwards.
//!
//! Leaves are visited depth first, in element order for vectors and tuples
//! and in key order for maps, so a tree and its gradient line up leaf for
//! leaf.

use crate::error::{Error, Result};
use crate::graph::array::Array;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A nested structure of arrays.
///
/// ```
/// use ferrox::{*, transforms::tree::Tree};
/// use std::collections::BTreeMap;
/// let mut layer = BTreeMap::new();
/// layer.insert("w".to_string(), ones(&[2], DType::Float32)?);
/// layer.insert("b".to_string(), zeros(&[2], DType::Float32)?);
/// let params = (vec![layer.clone(), layer], Some(ones(&[], DType::Float32)?));
/// assert_eq!(params.leaves().len(), 5);
/// let doubled = params.map_leaves(|a| a * 2.0)?;
/// assert_eq!(doubled.0[1]["w"].to_vec::<f32>()?, vec![2.0, 2.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub trait Tree: Sized {
    /// Appends the leaves, depth first.
    fn flatten_into(&self, leaves: &mut Vec<Array>);

    /// A tree shaped like `self` whose leaves are taken, in order, from
    /// `leaves`.
    fn rebuild(&self, leaves: &mut dyn Iterator<Item = Array>) -> Result<Self>;

    /// The leaves, depth first.
    fn leaves(&self) -> Vec<Array> {
        let mut out = Vec::new();
        self.flatten_into(&mut out);
        out
    }

    /// A tree shaped like `self` with exactly `leaves` as its leaves.
    fn with_leaves(&self, leaves: Vec<Array>) -> Result<Self> {
        let given = leaves.len();
        let mut it = leaves.into_iter();
        let tree = self.rebuild(&mut it)?;
        let extra = it.count();
        if extra > 0 {
            return Err(Error::value(
                "tree",
                format!("{given} leaves given for a tree of {}", given - extra),
            ));
        }
        Ok(tree)
    }

    /// The tree with `f` applied to every leaf.
    fn map_leaves(&self, f: impl Fn(&Array) -> Result<Array>) -> Result<Self> {
        let mapped = self.leaves().iter().map(f).collect::<Result<Vec<_>>>()?;
        self.with_leaves(mapped)
    }
}

impl Tree for Array {
    fn flatten_into(&self, leaves: &mut Vec<Array>) {
        leaves.push(self.clone());
    }
    fn rebuild(&self, leaves: &mut dyn Iterator<Item = Array>) -> Result<Self> {
        leaves
            .next()
            .ok_or_else(|| Error::value("tree", "fewer leaves than the tree has"))
    }
}

impl<T: Tree> Tree for Vec<T> {
    fn flatten_into(&self, leaves: &mut Vec<Array>) {
        for t in self {
            t.flatten_into(leaves);
        }
    }
    fn rebuild(&self, leaves: &mut dyn Iterator<Item = Array>) -> Result<Self> {
        self.iter().map(|t| t.rebuild(leaves)).collect()
    }
}

impl<T: Tree> Tree for Option<T> {
    fn flatten_into(&self, leaves: &mut Vec<Array>) {
        if let Some(t) = self {
            t.flatten_into(leaves);
        }
    }
    fn rebuild(&self, leaves: &mut dyn Iterator<Item = Array>) -> Result<Self> {
        self.as_ref().map(|t| t.rebuild(leaves)).transpose()
    }
}

impl<K: Ord + Clone, T: Tree> Tree for BTreeMap<K, T> {
    fn flatten_into(&self, leaves: &mut Vec<Array>) {
        for t in self.values() {
            t.flatten_into(leaves);
        }
    }
    fn rebuild(&self, leaves: &mut dyn Iterator<Item = Array>) -> Result<Self> {
        self.iter()
            .map(|(k, t)| Ok((k.clone(), t.rebuild(leaves)?)))
            .collect()
    }
}

macro_rules! tree_tuple {($($t:ident $i:tt),+) => {
    impl<$($t: Tree),+> Tree for ($($t,)+) {
        fn flatten_into(&self, leaves: &mut Vec<Array>) {
            $(self.$i.flatten_into(leaves);)+
        }
        fn rebuild(&self, leaves: &mut dyn Iterator<Item = Array>) -> Result<Self> {
            Ok(($(self.$i.rebuild(leaves)?,)+))
        }
    }
}}
tree_tuple!(A 0);
tree_tuple!(A 0, B 1);
tree_tuple!(A 0, B 1, C 2);
tree_tuple!(A 0, B 1, C 2, D 3);

/// `value_and_grad` over a tree of parameters: `f` maps the tree to a
/// scalar loss; the result gives the loss and a tree of gradients shaped
/// like the parameters. Compose with [`crate::compile()`] by flattening:
/// the returned function is `Clone + Send + Sync`.
///
/// ```
/// use ferrox::{*, transforms::tree::value_and_grad_tree};
/// let params = (Array::from_slice(&[1.0f32, 2.0], &[2])?, vec![Array::from_slice(&[3.0f32], &[1])?]);
/// let vg = value_and_grad_tree(|p: &(Array, Vec<Array>)| {
///     sum(&add(&multiply(&p.0, &p.0)?, &p.1[0])?, None, false)
/// });
/// let (loss, grads) = vg(&params)?;
/// assert_eq!(loss.item::<f32>()?, 11.0);
/// assert_eq!(grads.0.to_vec::<f32>()?, vec![2.0, 4.0]);
/// assert_eq!(grads.1[0].to_vec::<f32>()?, vec![2.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn value_and_grad_tree<P: Tree + Clone + Send + Sync + 'static>(
    f: impl Fn(&P) -> Result<Array> + Send + Sync + 'static,
) -> impl Fn(&P) -> Result<(Array, P)> + Clone + Send + Sync + 'static {
    let f = Arc::new(f);
    move |params: &P| {
        let leaves = params.leaves();
        let argnums: Vec<usize> = (0..leaves.len()).collect();
        let (template, f) = (params.clone(), f.clone());
        let flat = move |xs: &[Array]| Ok(vec![f(&template.with_leaves(xs.to_vec())?)?]);
        let (values, grads) = super::vjp::value_and_grad(flat, &argnums)(&leaves)?;
        let loss = values
            .into_iter()
            .next()
            .ok_or_else(|| Error::runtime("value_and_grad_tree", "no loss"))?;
        Ok((loss, params.with_leaves(grads)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::ops::creation::ones;

    #[test]
    fn rebuilding_checks_the_leaf_count() {
        let t = vec![ones(&[1], DType::Float32).unwrap(); 2];
        assert!(t.with_leaves(vec![]).is_err());
        let three = vec![ones(&[1], DType::Float32).unwrap(); 3];
        let e = t.with_leaves(three).unwrap_err();
        assert!(
            e.to_string().contains("3 leaves given for a tree of 2"),
            "{e}"
        );
    }

    #[test]
    fn maps_keep_key_order_and_tuples_nest() {
        let mut m = BTreeMap::new();
        m.insert("b", Array::from_slice(&[2.0f32], &[1]).unwrap());
        m.insert("a", Array::from_slice(&[1.0f32], &[1]).unwrap());
        let t = (
            m,
            (Array::from_slice(&[3.0f32], &[1]).unwrap(),),
            None::<Array>,
        );
        let got: Vec<f32> = t
            .leaves()
            .iter()
            .map(|a| a.item::<f32>().unwrap())
            .collect();
        assert_eq!(got, vec![1.0, 2.0, 3.0]);
    }
}
