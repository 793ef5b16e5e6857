// The one error is the macro's: the constant still has its type, so its use below is fine.
const VALUE: memtune::GroupingConsts = memtune::grouping_plan!(table = 1 GiB, table_memory = device);

fn main() {
    let _ = VALUE;
}
