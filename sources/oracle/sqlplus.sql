-- latencymap: Oracle wait-event histograms from SQL*Plus, printed in the PyLatencyMap record protocol.
--
-- For hosts without Python next to the database. Pipe the output into latencymap (or save it):
--   sqlplus -S -L scott@//dbhost:1521/ORCLPDB1 @oracle_sqlplus.sql "db file sequential read" 3 1200 micro \
--     | latencymap
-- Arguments: 1 event name (exact, as in v$event_name), 2 seconds between samples, 3 number of samples,
--            4 micro (GV$EVENT_HISTOGRAM_MICRO, 12.1.0.2+, microsecond buckets) or milli (GV$EVENT_HISTOGRAM).
-- SQL*Plus asks for the password (do not write user/password on the command line: it shows in `ps`).
-- Needs SELECT on SYS.GV_$EVENT_HISTOGRAM_MICRO / SYS.GV_$EVENT_HISTOGRAM (or SELECT_CATALOG_ROLE), and
-- EXECUTE on DBMS_LOCK before 18c (from 18c on DBMS_SESSION.SLEEP needs no grant).
-- Counts are summed over RAC instances. SQL*Plus substitutes the event name as text, once, into the q'[...]'
-- literal assigned to :event below (a name containing ]' would end that literal early: do not pass one); the
-- histogram query takes it only as that bind variable.
-- It writes latencymap_oracle_repeat.sql (one "/" per sample) in the current directory.

set echo off feedback off heading off pagesize 0 linesize 300 trimspool on verify off
set serveroutput on size unlimited format wrapped

variable event varchar2(64)
variable pause number
variable view_kind varchar2(5)
begin
  :event := q'[&1]';
  :pause := to_number('&2', '99999D99', 'NLS_NUMERIC_CHARACTERS=''.,''');
  :view_kind := lower('&4');
end;
/

-- One "/" per sample after the first: each re-runs the PL/SQL block left in the SQL buffer below, and
-- SQL*Plus prints a block's DBMS_OUTPUT as soon as it ends, so records stream out one by one.
set termout off
spool latencymap_oracle_repeat.sql
select '/' from dual connect by level < to_number('&3');
spool off
set termout on

declare
  histogram sys_refcursor;
  bucket    number;
  waits     number;
  now       timestamp with time zone := systimestamp;
  epoch_us  number;
  since     interval day(9) to second(6);
  query     varchar2(200);
begin
  if :view_kind = 'milli' then
    query := 'select wait_time_milli, sum(wait_count) from gv$event_histogram'
          || ' where event = :ev group by wait_time_milli order by 1';
  else
    query := 'select wait_time_micro, sum(wait_count) from gv$event_histogram_micro'
          || ' where event = :ev group by wait_time_micro order by 1';
  end if;
  since := sys_extract_utc(now) - timestamp '1970-01-01 00:00:00';
  epoch_us := round((extract(day from since) * 86400 + extract(hour from since) * 3600
                     + extract(minute from since) * 60 + extract(second from since)) * 1e6);
  dbms_output.put_line('<begin record>');
  dbms_output.put_line('timestamp, microsec, ' || to_char(epoch_us, 'FM99999999999999999999') || ', '
                       || to_char(now, 'DD-MON-YY HH.MI.SS.FF6 PM TZH:TZM'));
  dbms_output.put_line('label, ' || replace(:event, ',', ';'));
  dbms_output.put_line('latencyunit, ' || case when :view_kind = 'milli' then 'millisec' else 'microsec' end);
  dbms_output.put_line('datasource, oracle');
  open histogram for query using :event;
  loop
    fetch histogram into bucket, waits;
    exit when histogram%notfound;
    dbms_output.put_line(bucket || ', ' || waits);
  end loop;
  close histogram;
  dbms_output.put_line('<end record>');
  begin
    execute immediate 'begin dbms_session.sleep(:s); end;' using :pause;
  exception
    when others then  -- before 18c: DBMS_LOCK.SLEEP (needs EXECUTE ON DBMS_LOCK)
      execute immediate 'begin dbms_lock.sleep(:s); end;' using :pause;
  end;
end;
/
@latencymap_oracle_repeat.sql
exit
