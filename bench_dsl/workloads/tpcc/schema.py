"""The nine TPC-C tables (clause 1.3) as HammerDB and tpcc-mysql lay them out on MySQL InnoDB: the
primary keys of the specification, clustered so that each warehouse's rows sit together, and the
two secondary indexes both tools add (customer by last name, orders by customer). No foreign keys:
HammerDB has none, and tpcc-mysql's only cost time at load and at run without changing the result."""

from __future__ import annotations

# Bumped whenever a table, index or the load changes shape: data loaded by another version is reloaded.
SCHEMA_VERSION = 1

# Load-time constants (C_LOAD of clause 2.1.6) live in the database beside the data they shaped,
# since a later run may reuse the data with another seed.
CONSTANTS_TABLE = "tpcc_constants"

TABLES: dict[str, str] = {
    "warehouse": """CREATE TABLE warehouse (
  w_id SMALLINT UNSIGNED NOT NULL,
  w_name VARCHAR(10) NOT NULL,
  w_street_1 VARCHAR(20) NOT NULL,
  w_street_2 VARCHAR(20) NOT NULL,
  w_city VARCHAR(20) NOT NULL,
  w_state CHAR(2) NOT NULL,
  w_zip CHAR(9) NOT NULL,
  w_tax DECIMAL(4,4) NOT NULL,
  w_ytd DECIMAL(12,2) NOT NULL,
  PRIMARY KEY (w_id)
) ENGINE=InnoDB""",
    "district": """CREATE TABLE district (
  d_id TINYINT UNSIGNED NOT NULL,
  d_w_id SMALLINT UNSIGNED NOT NULL,
  d_name VARCHAR(10) NOT NULL,
  d_street_1 VARCHAR(20) NOT NULL,
  d_street_2 VARCHAR(20) NOT NULL,
  d_city VARCHAR(20) NOT NULL,
  d_state CHAR(2) NOT NULL,
  d_zip CHAR(9) NOT NULL,
  d_tax DECIMAL(4,4) NOT NULL,
  d_ytd DECIMAL(12,2) NOT NULL,
  d_next_o_id INT UNSIGNED NOT NULL,
  PRIMARY KEY (d_w_id, d_id)
) ENGINE=InnoDB""",
    "customer": """CREATE TABLE customer (
  c_id INT UNSIGNED NOT NULL,
  c_d_id TINYINT UNSIGNED NOT NULL,
  c_w_id SMALLINT UNSIGNED NOT NULL,
  c_first VARCHAR(16) NOT NULL,
  c_middle CHAR(2) NOT NULL,
  c_last VARCHAR(16) NOT NULL,
  c_street_1 VARCHAR(20) NOT NULL,
  c_street_2 VARCHAR(20) NOT NULL,
  c_city VARCHAR(20) NOT NULL,
  c_state CHAR(2) NOT NULL,
  c_zip CHAR(9) NOT NULL,
  c_phone CHAR(16) NOT NULL,
  c_since DATETIME NOT NULL,
  c_credit CHAR(2) NOT NULL,
  c_credit_lim DECIMAL(12,2) NOT NULL,
  c_discount DECIMAL(4,4) NOT NULL,
  c_balance DECIMAL(12,2) NOT NULL,
  c_ytd_payment DECIMAL(12,2) NOT NULL,
  c_payment_cnt SMALLINT UNSIGNED NOT NULL,
  c_delivery_cnt SMALLINT UNSIGNED NOT NULL,
  c_data VARCHAR(500) NOT NULL,
  PRIMARY KEY (c_w_id, c_d_id, c_id),
  KEY idx_customer (c_w_id, c_d_id, c_last, c_first)
) ENGINE=InnoDB""",
    # No primary key in the specification; InnoDB adds a hidden one, as with HammerDB.
    "history": """CREATE TABLE history (
  h_c_id INT UNSIGNED NOT NULL,
  h_c_d_id TINYINT UNSIGNED NOT NULL,
  h_c_w_id SMALLINT UNSIGNED NOT NULL,
  h_d_id TINYINT UNSIGNED NOT NULL,
  h_w_id SMALLINT UNSIGNED NOT NULL,
  h_date DATETIME NOT NULL,
  h_amount DECIMAL(6,2) NOT NULL,
  h_data VARCHAR(24) NOT NULL
) ENGINE=InnoDB""",
    "new_orders": """CREATE TABLE new_orders (
  no_o_id INT UNSIGNED NOT NULL,
  no_d_id TINYINT UNSIGNED NOT NULL,
  no_w_id SMALLINT UNSIGNED NOT NULL,
  PRIMARY KEY (no_w_id, no_d_id, no_o_id)
) ENGINE=InnoDB""",
    "orders": """CREATE TABLE orders (
  o_id INT UNSIGNED NOT NULL,
  o_d_id TINYINT UNSIGNED NOT NULL,
  o_w_id SMALLINT UNSIGNED NOT NULL,
  o_c_id INT UNSIGNED NOT NULL,
  o_entry_d DATETIME NOT NULL,
  o_carrier_id TINYINT UNSIGNED NULL,
  o_ol_cnt TINYINT UNSIGNED NOT NULL,
  o_all_local TINYINT UNSIGNED NOT NULL,
  PRIMARY KEY (o_w_id, o_d_id, o_id),
  KEY idx_orders (o_w_id, o_d_id, o_c_id, o_id)
) ENGINE=InnoDB""",
    "order_line": """CREATE TABLE order_line (
  ol_o_id INT UNSIGNED NOT NULL,
  ol_d_id TINYINT UNSIGNED NOT NULL,
  ol_w_id SMALLINT UNSIGNED NOT NULL,
  ol_number TINYINT UNSIGNED NOT NULL,
  ol_i_id INT UNSIGNED NOT NULL,
  ol_supply_w_id SMALLINT UNSIGNED NOT NULL,
  ol_delivery_d DATETIME NULL,
  ol_quantity TINYINT UNSIGNED NOT NULL,
  ol_amount DECIMAL(6,2) NOT NULL,
  ol_dist_info CHAR(24) NOT NULL,
  PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)
) ENGINE=InnoDB""",
    "item": """CREATE TABLE item (
  i_id INT UNSIGNED NOT NULL,
  i_im_id INT UNSIGNED NOT NULL,
  i_name VARCHAR(24) NOT NULL,
  i_price DECIMAL(5,2) NOT NULL,
  i_data VARCHAR(50) NOT NULL,
  PRIMARY KEY (i_id)
) ENGINE=InnoDB""",
    "stock": """CREATE TABLE stock (
  s_i_id INT UNSIGNED NOT NULL,
  s_w_id SMALLINT UNSIGNED NOT NULL,
  s_quantity SMALLINT NOT NULL,
  s_dist_01 CHAR(24) NOT NULL,
  s_dist_02 CHAR(24) NOT NULL,
  s_dist_03 CHAR(24) NOT NULL,
  s_dist_04 CHAR(24) NOT NULL,
  s_dist_05 CHAR(24) NOT NULL,
  s_dist_06 CHAR(24) NOT NULL,
  s_dist_07 CHAR(24) NOT NULL,
  s_dist_08 CHAR(24) NOT NULL,
  s_dist_09 CHAR(24) NOT NULL,
  s_dist_10 CHAR(24) NOT NULL,
  s_ytd INT UNSIGNED NOT NULL,
  s_order_cnt SMALLINT UNSIGNED NOT NULL,
  s_remote_cnt SMALLINT UNSIGNED NOT NULL,
  s_data VARCHAR(50) NOT NULL,
  PRIMARY KEY (s_w_id, s_i_id)
) ENGINE=InnoDB""",
}

CONSTANTS = f"""CREATE TABLE {CONSTANTS_TABLE} (
  name VARCHAR(32) NOT NULL PRIMARY KEY,
  value INT NOT NULL
) ENGINE=InnoDB"""
