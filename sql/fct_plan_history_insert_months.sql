-- record the months of one plan run from the registered frame plan_months_frame (capplan/history/store.py)
insert into plan_months by name
select * from plan_months_frame;
