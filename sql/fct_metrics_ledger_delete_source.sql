-- forget the hours a source stored before (a rate file ingested again replaces its hours).
delete from metrics_ledger where source = $source
