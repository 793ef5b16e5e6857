// The one error is the macro's: the constant still has its type, so its use below is fine.
const VALUE: memtune::GroupingConsts = memtune::grouping_plan!(table = 1 TiB, table_memory = device, input_memory = pinned);

fn main() {
    let _ = VALUE;
}
