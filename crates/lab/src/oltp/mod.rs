//! A TPC-C-like OLTP workload on one [`Db`] (seed 003 §4 ran TPC-C on
//! Oracle): warehouse, district, customer, history, order, new-order,
//! order-line, item and stock tables as key ranges, plus an index of
//! orders by customer for order-status. The mix is the seed's 45/43/4/4/4
//! (new-order, payment, order-status, delivery, stock-level); every
//! transaction that writes is one atomic [`flashkv_engine::WriteBatch`]
//! committed durably (the store is opened with `sync`), reads are `get`
//! and `scan`. Scaled down (fewer customers and items per warehouse) so a
//! run takes seconds; the access shape (NURand skew, 5–15 lines per order,
//! row sizes near TPC-C's) is kept.

use flashkv_engine::{Db, WriteBatch};
use rand::{rngs::SmallRng, Rng};

mod txn;

pub use txn::{Kind, MIX};

/// How big the database is.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    pub warehouses: u32,
    /// Customers per district (TPC-C: 3000); also the initial orders per district.
    pub customers: u32,
    /// Items (TPC-C: 100,000); every warehouse stocks each of them.
    pub items: u32,
}

/// Districts per warehouse, as in TPC-C.
pub const DISTRICTS: u32 = 10;

/// Table prefixes: one key range per table.
#[derive(Debug, Clone, Copy)]
#[repr(u8)]
pub(crate) enum Table {
    Warehouse = b'W',
    District = b'D',
    Customer = b'C',
    History = b'H',
    Order = b'O',
    NewOrder = b'N',
    OrderLine = b'L',
    Item = b'I',
    Stock = b'S',
    /// Orders by customer (w, d, c, o): order-status finds the newest one.
    OrderByCustomer = b'X',
}

/// A key: the table's prefix, then big-endian ids so keys sort by them.
pub(crate) fn key(t: Table, ids: &[u32]) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + 4 * ids.len());
    k.push(t as u8);
    for id in ids {
        k.extend_from_slice(&id.to_be_bytes());
    }
    k
}

/// Row bytes near TPC-C's (warehouse 89, district 95, customer 655, history
/// 46, order 24, new-order 8, order-line 54, item 82, stock 306): numeric
/// fields first, then filler.
pub(crate) fn row_bytes(t: Table) -> usize {
    match t {
        Table::Warehouse => 89,
        Table::District => 95,
        Table::Customer => 655,
        Table::History => 46,
        Table::Order => 24,
        Table::NewOrder => 8,
        Table::OrderLine => 54,
        Table::Item => 82,
        Table::Stock => 306,
        Table::OrderByCustomer => 8,
    }
}

/// A row: `fields` signed 64-bit numbers, padded to the table's size.
pub(crate) fn row(t: Table, fields: &[i64]) -> Vec<u8> {
    let mut v = vec![b'x'; row_bytes(t).max(8 * fields.len())];
    for (i, f) in fields.iter().enumerate() {
        v[8 * i..8 * i + 8].copy_from_slice(&f.to_le_bytes());
    }
    v
}

pub(crate) fn field(row: &[u8], i: usize) -> i64 {
    row.get(8 * i..8 * i + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, i64::from_le_bytes)
}

/// The id a key ends in (an order number), if it is long enough to hold one.
pub(crate) fn last_id(k: &[u8]) -> Option<u32> {
    let at = k.len().checked_sub(4)?;
    k[at..].try_into().ok().map(u32::from_be_bytes)
}

pub(crate) fn set_field(row: &mut [u8], i: usize, v: i64) {
    row[8 * i..8 * i + 8].copy_from_slice(&v.to_le_bytes());
}

pub(crate) fn add_field(row: &mut [u8], i: usize, delta: i64) {
    set_field(row, i, field(row, i) + delta);
}

/// TPC-C's non-uniform random number in `[x, y]` (clause 2.1.6).
pub(crate) fn nurand(rng: &mut SmallRng, a: u32, x: u32, y: u32) -> u32 {
    let c = a / 3; // a fixed run-time constant, as the clause allows
    (((rng.gen_range(0..=a) | rng.gen_range(x..=y)) + c) % (y - x + 1)) + x
}

/// Rows per load batch: batches stay well within half the write-ahead log.
const LOAD_BATCH: usize = 400;

/// Loads the initial database (TPC-C clause 4.3: every customer has one
/// order; the last 30 % of orders are still new).
pub fn load(db: &Db, s: Scale, rng: &mut SmallRng) -> flashkv_engine::Result<()> {
    let mut l = Loader {
        db,
        batch: WriteBatch::default(),
    };
    for i in 0..s.items {
        l.put(Table::Item, &[i], &[rng.gen_range(100..10_000)])?;
    }
    for w in 0..s.warehouses {
        l.put(Table::Warehouse, &[w], &[0, 0])?;
        for i in 0..s.items {
            let qty = rng.gen_range(10..=100);
            l.put(Table::Stock, &[w, i], &[qty, 0, 0])?;
        }
        for d in 0..DISTRICTS {
            load_district(&mut l, s, w, d, rng)?;
        }
    }
    l.finish()
}

/// District `d` of warehouse `w`: its customers and one order each.
fn load_district(
    l: &mut Loader,
    s: Scale,
    w: u32,
    d: u32,
    rng: &mut SmallRng,
) -> flashkv_engine::Result<()> {
    l.put(Table::District, &[w, d], &[i64::from(s.customers), 0])?;
    for c in 0..s.customers {
        l.put(Table::Customer, &[w, d, c], &[0, 0, 0])?;
    }
    for o in 0..s.customers {
        let c = o; // a permutation would do; the order is immaterial here
        let lines = rng.gen_range(5..=15);
        let new = o >= s.customers * 7 / 10;
        l.put(
            Table::Order,
            &[w, d, o],
            &[c.into(), i64::from(!new), lines],
        )?;
        l.put(Table::OrderByCustomer, &[w, d, c, o], &[])?;
        if new {
            l.put(Table::NewOrder, &[w, d, o], &[])?;
        }
        for n in 0..lines as u32 {
            let item = rng.gen_range(0..s.items);
            let fields = [item.into(), 5, 0, i64::from(!new)];
            l.put(Table::OrderLine, &[w, d, o, n], &fields)?;
        }
    }
    Ok(())
}

/// Writes the rows it is given in batches of [`LOAD_BATCH`].
struct Loader<'a> {
    db: &'a Db,
    batch: WriteBatch,
}

impl Loader<'_> {
    fn put(&mut self, t: Table, ids: &[u32], fields: &[i64]) -> flashkv_engine::Result<()> {
        self.batch.put(&key(t, ids), &row(t, fields));
        if self.batch.len() >= LOAD_BATCH {
            self.db.write(std::mem::take(&mut self.batch))?;
        }
        Ok(())
    }

    /// Writes the last, partial batch.
    fn finish(self) -> flashkv_engine::Result<()> {
        if !self.batch.is_empty() {
            self.db.write(self.batch)?;
        }
        Ok(())
    }
}
