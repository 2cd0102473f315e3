-- how many runs of the file with this content hash `load_tests` holds already (0: a new file).
select count(*) as runs
from load_tests
where file_sha256 = $file_sha256
