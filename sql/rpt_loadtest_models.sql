-- the models in the request logs, busiest first (for error messages and defaults).
select model, count(*) as requests
from requests
group by model
order by requests desc, model
