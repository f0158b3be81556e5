use goondan_runtime::prelude::*;

pub struct Store<T> {
    items: Vec<T>,
}

#[tool(name = "store")]
impl<T: Clone + Send + Sync + 'static> Store<T> {
    pub fn count(&self) -> usize {
        self.items.len()
    }
}

fn main() {}
