//! [`Params`]: a nested, named tree of arrays (maps and lists), the shape
//! of a model's parameters, their gradients and an optimizer's state.
//!
//! A leaf's name is its path with dots: `layers.0.attn.q_proj.weight` is
//! key `layers`, list index 0, then keys `attn`, `q_proj`, `weight`. A path
//! segment made of digits alone is a list index, as in MLX's
//! `tree_unflatten`, so `from_named(p.named())` rebuilds `p`.

use crate::error::{Result, value};
use ferrox::{Array, Tree};
use std::collections::BTreeMap;

/// A tree of arrays: a leaf, a map from names to trees, or a list.
///
/// ```
/// use ferrox_nn::Params;
/// use ferrox::{ones, DType, Tree};
/// let p = Params::from_named([
///     ("layers.0.weight".to_string(), ones(&[2, 2], DType::Float32)?),
///     ("layers.1.weight".to_string(), ones(&[2], DType::Float32)?),
/// ])?;
/// assert_eq!(p.get("layers.1.weight").map(|a| a.shape().to_vec()), Some(vec![2]));
/// assert_eq!(p.leaves().len(), 2);
/// let names: Vec<String> = p.named().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["layers.0.weight", "layers.1.weight"]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub enum Params {
    /// One array.
    Array(Array),
    /// Named subtrees, in key order.
    Map(BTreeMap<String, Params>),
    /// Subtrees by index.
    List(Vec<Params>),
}

impl Default for Params {
    fn default() -> Self {
        Params::Map(BTreeMap::new())
    }
}

impl From<Array> for Params {
    fn from(a: Array) -> Self {
        Params::Array(a)
    }
}

impl Params {
    /// An empty map.
    ///
    /// ```
    /// assert!(ferrox_nn::Params::new().is_empty());
    /// ```
    pub fn new() -> Params {
        Params::default()
    }

    /// The tree whose leaves are `named` (dotted paths; digit segments are
    /// list indices). A missing list index is an empty map (a list element
    /// without parameters, as a ReLU in a Sequential); no path may be both
    /// a leaf and a subtree.
    ///
    /// ```
    /// use ferrox_nn::Params;
    /// let a = ferrox::zeros(&[1], ferrox::DType::Float32)?;
    /// let p = Params::from_named([("l.1".to_string(), a.clone())])?;
    /// assert!(matches!(p.subtree("l.0"), Some(Params::Map(m)) if m.is_empty()));
    /// let e = Params::from_named([("w".to_string(), a.clone()), ("w.b".to_string(), a)]).unwrap_err();
    /// assert!(e.to_string().contains("\"w\""), "{e}");
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn from_named(named: impl IntoIterator<Item = (String, Array)>) -> Result<Params> {
        // Build with maps everywhere, then turn all-digit maps into lists.
        enum Raw {
            Leaf(Array),
            Node(BTreeMap<String, Raw>),
        }
        fn insert(
            node: &mut BTreeMap<String, Raw>,
            path: &str,
            parts: &[&str],
            a: Array,
        ) -> Result<()> {
            let conflict = || value("Params", format!("\"{path}\" is both a leaf and a subtree"));
            match parts {
                [] => Err(value("Params", "an empty parameter name")),
                [last] => match node.insert(last.to_string(), Raw::Leaf(a)) {
                    None => Ok(()),
                    Some(_) => Err(conflict()),
                },
                [head, rest @ ..] => {
                    let child = node
                        .entry(head.to_string())
                        .or_insert_with(|| Raw::Node(BTreeMap::new()));
                    match child {
                        Raw::Node(m) => insert(m, path, rest, a),
                        Raw::Leaf(_) => Err(value(
                            "Params",
                            format!("\"{head}\" is both a leaf and a subtree (at \"{path}\")"),
                        )),
                    }
                }
            }
        }
        fn finish(prefix: &str, raw: Raw) -> Result<Params> {
            let m = match raw {
                Raw::Leaf(a) => return Ok(Params::Array(a)),
                Raw::Node(m) => m,
            };
            let join = |k: &str| join_path(prefix, k);
            let digits = !m.is_empty() && m.keys().all(|k| k.bytes().all(|b| b.is_ascii_digit()));
            if !digits {
                return m
                    .into_iter()
                    .map(|(k, v)| Ok((k.clone(), finish(&join(&k), v)?)))
                    .collect::<Result<_>>()
                    .map(Params::Map);
            }
            let mut items: Vec<(usize, String, Raw)> = m
                .into_iter()
                .map(|(k, v)| {
                    let i = k
                        .parse::<usize>()
                        .map_err(|_| value("Params", format!("bad list index \"{}\"", join(&k))))?;
                    Ok((i, k, v))
                })
                .collect::<Result<_>>()?;
            items.sort_by_key(|(i, _, _)| *i);
            // A list element without parameters (a ReLU in a Sequential) has
            // no names: it becomes an empty map, as in MLX's trees.
            let mut list = Vec::with_capacity(items.len());
            for (i, k, v) in items {
                while list.len() < i {
                    list.push(Params::new());
                }
                list.push(finish(&join(&k), v)?);
            }
            Ok(Params::List(list))
        }
        let mut root = BTreeMap::new();
        for (name, a) in named {
            let parts: Vec<&str> = name.split('.').collect();
            if parts.iter().any(|p| p.is_empty()) {
                return Err(value("Params", format!("bad parameter name \"{name}\"")));
            }
            insert(&mut root, &name, &parts, a)?;
        }
        if root.is_empty() {
            return Ok(Params::new());
        }
        finish("", Raw::Node(root))
    }

    /// The leaves with their dotted names, depth first (the order of
    /// [`Tree::leaves`]).
    ///
    /// ```
    /// use ferrox_nn::Params;
    /// let p = Params::List(vec![ferrox::zeros(&[1], ferrox::DType::Float32)?.into()]);
    /// assert_eq!(p.named()[0].0, "0");
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn named(&self) -> Vec<(String, Array)> {
        fn walk(p: &Params, prefix: &str, out: &mut Vec<(String, Array)>) {
            match p {
                Params::Array(a) => out.push((prefix.to_string(), a.clone())),
                Params::Map(m) => m
                    .iter()
                    .for_each(|(k, v)| walk(v, &join_path(prefix, k), out)),
                Params::List(l) => l
                    .iter()
                    .enumerate()
                    .for_each(|(i, v)| walk(v, &join_path(prefix, &i.to_string()), out)),
            }
        }
        let mut out = Vec::new();
        walk(self, "", &mut out);
        out
    }

    /// The leaves as a map from dotted name to array.
    ///
    /// ```
    /// let p = ferrox_nn::Params::from_named([("a.b".to_string(), ferrox::zeros(&[1], ferrox::DType::Float32)?)])?;
    /// assert!(p.to_map().contains_key("a.b"));
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn to_map(&self) -> BTreeMap<String, Array> {
        self.named().into_iter().collect()
    }

    /// The subtree at a dotted path (`""` is the whole tree).
    ///
    /// ```
    /// let p = ferrox_nn::Params::from_named([("a.b".to_string(), ferrox::zeros(&[1], ferrox::DType::Float32)?)])?;
    /// assert!(matches!(p.subtree("a"), Some(ferrox_nn::Params::Map(_))));
    /// assert!(p.subtree("a.c").is_none());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn subtree(&self, path: &str) -> Option<&Params> {
        if path.is_empty() {
            return Some(self);
        }
        path.split('.').try_fold(self, |node, seg| match node {
            Params::Map(m) => m.get(seg),
            Params::List(l) => seg.parse::<usize>().ok().and_then(|i| l.get(i)),
            Params::Array(_) => None,
        })
    }

    /// The leaf at a dotted path.
    ///
    /// ```
    /// let p = ferrox_nn::Params::from_named([("w".to_string(), ferrox::zeros(&[3], ferrox::DType::Float32)?)])?;
    /// assert_eq!(p.get("w").unwrap().shape(), &[3]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn get(&self, path: &str) -> Option<&Array> {
        match self.subtree(path)? {
            Params::Array(a) => Some(a),
            _ => None,
        }
    }

    /// Whether the tree has no leaves.
    ///
    /// ```
    /// assert!(ferrox_nn::Params::List(vec![]).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        match self {
            Params::Array(_) => false,
            Params::Map(m) => m.values().all(Params::is_empty),
            Params::List(l) => l.iter().all(Params::is_empty),
        }
    }

    /// The number of scalars in all leaves.
    ///
    /// ```
    /// let p = ferrox_nn::Params::from_named([("w".to_string(), ferrox::zeros(&[3, 2], ferrox::DType::Float32)?)])?;
    /// assert_eq!(p.num_elements(), 6);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn num_elements(&self) -> usize {
        self.leaves().iter().map(Array::size).sum()
    }

    /// The tree with `f` applied to every leaf and its dotted name.
    ///
    /// ```
    /// let p = ferrox_nn::Params::from_named([("w".to_string(), ferrox::ones(&[2], ferrox::DType::Float32)?)])?;
    /// let q = p.map_named(|_, a| a * 3.0)?;
    /// assert_eq!(q.get("w").unwrap().to_vec::<f32>()?, vec![3.0, 3.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn map_named(&self, f: impl Fn(&str, &Array) -> Result<Array>) -> Result<Params> {
        let mapped = self
            .named()
            .iter()
            .map(|(n, a)| f(n, a))
            .collect::<Result<Vec<_>>>()?;
        self.with_leaves(mapped)
    }
}

/// `prefix.name`, or `name` at the root.
pub(crate) fn join_path(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

impl Tree for Params {
    fn flatten_into(&self, leaves: &mut Vec<Array>) {
        match self {
            Params::Array(a) => leaves.push(a.clone()),
            Params::Map(m) => m.values().for_each(|v| v.flatten_into(leaves)),
            Params::List(l) => l.iter().for_each(|v| v.flatten_into(leaves)),
        }
    }
    fn rebuild(&self, leaves: &mut dyn Iterator<Item = Array>) -> Result<Self> {
        Ok(match self {
            Params::Array(a) => Params::Array(a.rebuild(leaves)?),
            Params::Map(m) => Params::Map(m.rebuild(leaves)?),
            Params::List(l) => Params::List(l.rebuild(leaves)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrox::{DType, zeros};

    fn a(n: usize) -> Array {
        zeros(&[n], DType::Float32).unwrap()
    }

    #[test]
    fn names_round_trip_with_lists_of_ten_or_more() {
        let named: Vec<(String, Array)> = (0..12)
            .map(|i| (format!("layers.{i}.w"), a(i + 1)))
            .chain([("head.b".to_string(), a(1))])
            .collect();
        let p = Params::from_named(named.clone()).unwrap();
        let Params::Map(m) = &p else { panic!() };
        assert!(matches!(m["layers"], Params::List(ref l) if l.len() == 12));
        assert_eq!(p.get("layers.10.w").unwrap().shape(), &[11]);
        let back = Params::from_named(p.named()).unwrap();
        assert_eq!(back.named().len(), 13);
        // leaves() and named() agree on order.
        let ids: Vec<u64> = p.leaves().iter().map(Array::id).collect();
        let ids2: Vec<u64> = p.named().iter().map(|(_, a)| a.id()).collect();
        assert_eq!(ids, ids2);
    }

    #[test]
    fn bad_names_are_errors() {
        assert!(Params::from_named([("a..b".to_string(), a(1))]).is_err());
        assert!(Params::from_named([(String::new(), a(1))]).is_err());
        let e = Params::from_named([("w".to_string(), a(1)), ("w".to_string(), a(1))]).unwrap_err();
        assert!(e.to_string().contains("\"w\""), "{e}");
    }
}
