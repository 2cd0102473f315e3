-- freed buffer blocks the allocator keeps for reuse instead of returning to the OS; parameter: $limit, e.g. '1024MiB'
set block_allocator_memory = $limit
