package tpcc

// The schema: the nine tables of clause 1.3 with HammerDB's PostgreSQL
// types, keys and secondary indexes, and a tpcc_meta row that records what
// loaded them. Keys and indexes are built after the data is copied in.

var tablesDDL = []string{
	`CREATE TABLE tpcc_meta (
	version text NOT NULL,
	warehouses int NOT NULL,
	c_last int NOT NULL,
	c_id int NOT NULL,
	ol_i_id int NOT NULL,
	loaded_at timestamptz NOT NULL DEFAULT now())`,
	`CREATE TABLE warehouse (
	w_id int NOT NULL,
	w_name varchar(10),
	w_street_1 varchar(20),
	w_street_2 varchar(20),
	w_city varchar(20),
	w_state char(2),
	w_zip char(9),
	w_tax numeric(4,4),
	w_ytd numeric(12,2))`,
	`CREATE TABLE district (
	d_id smallint NOT NULL,
	d_w_id int NOT NULL,
	d_name varchar(10),
	d_street_1 varchar(20),
	d_street_2 varchar(20),
	d_city varchar(20),
	d_state char(2),
	d_zip char(9),
	d_tax numeric(4,4),
	d_ytd numeric(12,2),
	d_next_o_id int)`,
	`CREATE TABLE customer (
	c_id int NOT NULL,
	c_d_id smallint NOT NULL,
	c_w_id int NOT NULL,
	c_first varchar(16),
	c_middle char(2),
	c_last varchar(16),
	c_street_1 varchar(20),
	c_street_2 varchar(20),
	c_city varchar(20),
	c_state char(2),
	c_zip char(9),
	c_phone char(16),
	c_since timestamp,
	c_credit char(2),
	c_credit_lim numeric(12,2),
	c_discount numeric(4,4),
	c_balance numeric(12,2),
	c_ytd_payment numeric(12,2),
	c_payment_cnt int,
	c_delivery_cnt int,
	c_data varchar(500))`,
	`CREATE TABLE history (
	h_c_id int,
	h_c_d_id smallint,
	h_c_w_id int,
	h_d_id smallint,
	h_w_id int,
	h_date timestamp,
	h_amount numeric(6,2),
	h_data varchar(24))`,
	`CREATE TABLE new_order (
	no_o_id int NOT NULL,
	no_d_id smallint NOT NULL,
	no_w_id int NOT NULL)`,
	`CREATE TABLE orders (
	o_id int NOT NULL,
	o_d_id smallint NOT NULL,
	o_w_id int NOT NULL,
	o_c_id int,
	o_entry_d timestamp,
	o_carrier_id smallint,
	o_ol_cnt smallint,
	o_all_local smallint)`,
	`CREATE TABLE order_line (
	ol_o_id int NOT NULL,
	ol_d_id smallint NOT NULL,
	ol_w_id int NOT NULL,
	ol_number smallint NOT NULL,
	ol_i_id int,
	ol_supply_w_id int,
	ol_delivery_d timestamp,
	ol_quantity smallint,
	ol_amount numeric(6,2),
	ol_dist_info char(24))`,
	`CREATE TABLE item (
	i_id int NOT NULL,
	i_im_id int,
	i_name varchar(24),
	i_price numeric(5,2),
	i_data varchar(50))`,
	`CREATE TABLE stock (
	s_i_id int NOT NULL,
	s_w_id int NOT NULL,
	s_quantity smallint,
	s_dist_01 char(24),
	s_dist_02 char(24),
	s_dist_03 char(24),
	s_dist_04 char(24),
	s_dist_05 char(24),
	s_dist_06 char(24),
	s_dist_07 char(24),
	s_dist_08 char(24),
	s_dist_09 char(24),
	s_dist_10 char(24),
	s_ytd numeric(8,0),
	s_order_cnt smallint,
	s_remote_cnt smallint,
	s_data varchar(50))`,
}

// Tables are the TPC-C tables, in the order the load fills them.
var Tables = []string{"item", "warehouse", "district", "stock", "customer", "history", "orders", "new_order", "order_line"}

// indexDDL builds the keys, and the two secondary indexes the transactions
// need: customers by last name (payment and order-status) and a customer's
// latest order (order-status).
var indexDDL = []string{
	`ALTER TABLE warehouse ADD PRIMARY KEY (w_id)`,
	`ALTER TABLE district ADD PRIMARY KEY (d_w_id, d_id)`,
	`ALTER TABLE customer ADD PRIMARY KEY (c_w_id, c_d_id, c_id)`,
	`CREATE INDEX customer_i2 ON customer (c_w_id, c_d_id, c_last, c_first, c_id)`,
	`ALTER TABLE new_order ADD PRIMARY KEY (no_w_id, no_d_id, no_o_id)`,
	`ALTER TABLE orders ADD PRIMARY KEY (o_w_id, o_d_id, o_id)`,
	`CREATE INDEX orders_i2 ON orders (o_w_id, o_d_id, o_c_id, o_id)`,
	`ALTER TABLE order_line ADD PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)`,
	`ALTER TABLE item ADD PRIMARY KEY (i_id)`,
	`ALTER TABLE stock ADD PRIMARY KEY (s_w_id, s_i_id)`,
}

// rollbackState is the SQLSTATE the new-order function raises for the 1%
// of new orders the specification has roll back on an unused item number
// (2.4.2.3): an expected outcome, not a failure.
const rollbackState = "TPCRB"

// functionsDDL are the five transactions as PL/pgSQL functions, one call
// each, as HammerDB runs TPC-C on PostgreSQL: the driver draws the inputs
// (clause 2) and the server does every read and write of the profile in
// one round trip, so the client stays light.
var functionsDDL = []string{
	// New-Order (2.4.2): the items come sorted by item number, which keeps
	// concurrent new orders from deadlocking on stock rows; an unused item
	// number (the last) rolls the whole transaction back.
	`CREATE FUNCTION tpcc_new_order(p_w_id int, p_d_id int, p_c_id int, p_all_local int,
	p_item_ids int[], p_supply_w_ids int[], p_quantities int[]) RETURNS numeric
LANGUAGE plpgsql AS $$
DECLARE
	v_w_tax numeric;
	v_d_tax numeric;
	v_o_id int;
	v_c_discount numeric;
	v_c_last text;
	v_c_credit text;
	v_i_price numeric;
	v_i_name text;
	v_i_data text;
	v_s_data text;
	v_dist text;
	v_amount numeric;
	v_total numeric := 0;
	n int := cardinality(p_item_ids);
BEGIN
	SELECT w_tax INTO v_w_tax FROM warehouse WHERE w_id = p_w_id;
	UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w_id AND d_id = p_d_id
		RETURNING d_next_o_id - 1, d_tax INTO v_o_id, v_d_tax;
	SELECT c_discount, c_last, c_credit INTO v_c_discount, v_c_last, v_c_credit
		FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = p_c_id;
	INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
		VALUES (v_o_id, p_d_id, p_w_id, p_c_id, localtimestamp, NULL, n, p_all_local);
	INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d_id, p_w_id);
	FOR i IN 1..n LOOP
		SELECT i_price, i_name, i_data INTO v_i_price, v_i_name, v_i_data FROM item WHERE i_id = p_item_ids[i];
		IF NOT FOUND THEN
			RAISE EXCEPTION 'new-order rolled back: item % does not exist', p_item_ids[i] USING ERRCODE = 'TPCRB';
		END IF;
		UPDATE stock SET
			s_quantity = CASE WHEN s_quantity - p_quantities[i] >= 10 THEN s_quantity - p_quantities[i]
				ELSE s_quantity - p_quantities[i] + 91 END,
			s_ytd = s_ytd + p_quantities[i],
			s_order_cnt = s_order_cnt + 1,
			s_remote_cnt = s_remote_cnt + (p_supply_w_ids[i] <> p_w_id)::int
		WHERE s_w_id = p_supply_w_ids[i] AND s_i_id = p_item_ids[i]
		RETURNING s_data, CASE p_d_id WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03
			WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07
			WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END
		INTO v_s_data, v_dist;
		v_amount := p_quantities[i] * v_i_price;
		INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
			ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
			VALUES (v_o_id, p_d_id, p_w_id, i, p_item_ids[i], p_supply_w_ids[i], NULL, p_quantities[i], v_amount, v_dist);
		v_total := v_total + v_amount;
	END LOOP;
	RETURN v_total * (1 - v_c_discount) * (1 + v_w_tax + v_d_tax);
END $$`,

	// The customer a payment or an order-status is about: by number, or
	// the one in the middle of those with the last name, by first name
	// (2.5.2.2, 2.6.2.2).
	`CREATE FUNCTION tpcc_customer(p_w_id int, p_d_id int, p_c_id int, p_c_last text, p_by_name bool) RETURNS int
LANGUAGE plpgsql STABLE AS $$
DECLARE
	v_n int;
	v_c_id int;
BEGIN
	IF NOT p_by_name THEN
		RETURN p_c_id;
	END IF;
	SELECT count(*) INTO v_n FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_c_last;
	IF v_n = 0 THEN
		RAISE EXCEPTION 'no customer named % in warehouse %, district %', p_c_last, p_w_id, p_d_id;
	END IF;
	SELECT c_id INTO v_c_id FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_c_last
		ORDER BY c_first OFFSET (v_n - 1) / 2 LIMIT 1;
	RETURN v_c_id;
END $$`,

	// Payment (2.5.2).
	`CREATE FUNCTION tpcc_payment(p_w_id int, p_d_id int, p_c_w_id int, p_c_d_id int, p_c_id int,
	p_c_last text, p_by_name bool, p_amount numeric) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	v_w_name text;
	v_d_name text;
	v_c_id int;
BEGIN
	UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w_id RETURNING w_name INTO v_w_name;
	UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w_id AND d_id = p_d_id RETURNING d_name INTO v_d_name;
	v_c_id := tpcc_customer(p_c_w_id, p_c_d_id, p_c_id, p_c_last, p_by_name);
	UPDATE customer SET
		c_balance = c_balance - p_amount,
		c_ytd_payment = c_ytd_payment + p_amount,
		c_payment_cnt = c_payment_cnt + 1,
		c_data = CASE WHEN c_credit = 'BC'
			THEN left(format('%s %s %s %s %s %s | ', v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, p_amount) || c_data, 500)
			ELSE c_data END
	WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id;
	INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
		VALUES (v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, localtimestamp, p_amount, v_w_name || '    ' || v_d_name);
	RETURN v_c_id;
END $$`,

	// Order-Status (2.6.2): read-only; returns the lines of the customer's
	// latest order.
	`CREATE FUNCTION tpcc_order_status(p_w_id int, p_d_id int, p_c_id int, p_c_last text, p_by_name bool) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	v_c_id int;
	v_balance numeric;
	v_o_id int;
	v_lines int;
	v_amount numeric;
BEGIN
	v_c_id := tpcc_customer(p_w_id, p_d_id, p_c_id, p_c_last, p_by_name);
	SELECT c_balance INTO v_balance FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = v_c_id;
	SELECT o_id INTO v_o_id FROM orders WHERE o_w_id = p_w_id AND o_d_id = p_d_id AND o_c_id = v_c_id
		ORDER BY o_id DESC LIMIT 1;
	SELECT count(*), sum(ol_amount) INTO v_lines, v_amount FROM order_line
		WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id AND ol_o_id = v_o_id;
	RETURN v_lines;
END $$`,

	// Delivery (2.7.4), run in place rather than queued, as HammerDB does:
	// the oldest undelivered order of each district; a district with none
	// (or whose oldest another delivery took first) is skipped. Returns
	// the districts delivered.
	`CREATE FUNCTION tpcc_delivery(p_w_id int, p_carrier_id int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	v_o_id int;
	v_c_id int;
	v_amount numeric;
	v_done int := 0;
BEGIN
	FOR d IN 1..10 LOOP
		v_o_id := NULL;
		DELETE FROM new_order WHERE no_w_id = p_w_id AND no_d_id = d AND no_o_id =
			(SELECT min(no_o_id) FROM new_order WHERE no_w_id = p_w_id AND no_d_id = d)
			RETURNING no_o_id INTO v_o_id;
		CONTINUE WHEN v_o_id IS NULL;
		UPDATE orders SET o_carrier_id = p_carrier_id WHERE o_w_id = p_w_id AND o_d_id = d AND o_id = v_o_id
			RETURNING o_c_id INTO v_c_id;
		WITH delivered AS (
			UPDATE order_line SET ol_delivery_d = localtimestamp
			WHERE ol_w_id = p_w_id AND ol_d_id = d AND ol_o_id = v_o_id RETURNING ol_amount)
		SELECT sum(ol_amount) INTO v_amount FROM delivered;
		UPDATE customer SET c_balance = c_balance + v_amount, c_delivery_cnt = c_delivery_cnt + 1
			WHERE c_w_id = p_w_id AND c_d_id = d AND c_id = v_c_id;
		v_done := v_done + 1;
	END LOOP;
	RETURN v_done;
END $$`,

	// Stock-Level (2.8.2): read-only.
	`CREATE FUNCTION tpcc_stock_level(p_w_id int, p_d_id int, p_threshold int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	v_next int;
	v_count int;
BEGIN
	SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id;
	SELECT count(DISTINCT s_i_id) INTO v_count FROM order_line, stock
		WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id AND ol_o_id < v_next AND ol_o_id >= v_next - 20
			AND s_w_id = p_w_id AND s_i_id = ol_i_id AND s_quantity < p_threshold;
	RETURN v_count;
END $$`,
}
