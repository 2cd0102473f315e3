-- migrate an old `fct_histogram_hourly` table (one row per bin) in place: its bins move into
-- `fct_histogram_hourly_bins` (one row per hour x model x metric, bins ascending) and the table is
-- dropped, so sql/ddl_profile.sql creates the view of that name readers read. Same counts, same
-- bins. Rerunnable: a run cut short before the drop starts again from an empty bins table.
-- Fixed text: no value comes from outside.
create table if not exists fct_histogram_hourly_bins (
    hour_utc timestamp  not null,
    model    varchar    not null,
    metric   varchar    not null,
    bins     smallint[] not null,
    counts   bigint[]   not null
);
delete from fct_histogram_hourly_bins;
insert into fct_histogram_hourly_bins
select hour_utc, model, metric, list(bin order by bin), list(count order by bin)
from (select hour_utc, model, metric, bin, sum(count)::bigint as count from fct_histogram_hourly group by all)
group by all;
drop table fct_histogram_hourly;
