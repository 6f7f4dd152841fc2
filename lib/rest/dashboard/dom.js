// @ts-check
/**
 * The page's DOM and formatting helpers: elements by id, element and SVG builders, number and time formats.
 *
 * One of the dashboard page's scripts, run in this order as classic scripts that share one global scope (the page
 * lists them; lib/rest/dashboard-page.ts inlines each, byte for byte): dom.js, api.js, crawls.js, panels.js, app.js.
 */
'use strict';

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * The element with this id, of this type; the page's HTML has them all, so a missing one is a bug.
 * @template {Element} T
 * @param {string} id
 * @param {{ new (): T, prototype: T }} type
 * @returns {T}
 */
function byId(id, type) {
  const node = document.getElementById(id);
  if (!(node instanceof type)) throw new Error(`the page has no ${type.name} #${id}`);
  return node;
}

/** @param {string} id */
const $ = (id) => byId(id, HTMLElement);
/** @param {string} id */
const input = (id) => byId(id, HTMLInputElement);

/**
 * @typedef {object} ElProps
 * @property {string} [class]
 * @property {string | number} [text]
 * @property {Record<string, string | number>} [attrs]
 * @property {Record<string, EventListener>} [on]
 */

/**
 * An element with its class, text, attributes, listeners and children (strings become text nodes).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {ElProps} [props]
 * @param {(Node | string)[]} [children]
 * @returns {HTMLElementTagNameMap[K]}
 */
function el(tag, props = {}, children = []) {
  const node = document.createElement(tag);
  if (props.class) node.className = props.class;
  if (props.text !== undefined) node.textContent = String(props.text);
  for (const [name, value] of Object.entries(props.attrs ?? {})) node.setAttribute(name, String(value));
  for (const [type, listener] of Object.entries(props.on ?? {})) node.addEventListener(type, listener);
  for (const child of children) node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  return node;
}

/**
 * An SVG element of the chart.
 * @param {string} tag
 * @param {Record<string, string | number>} attrs
 * @param {string} [text]
 */
function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** @param {Node} node */
function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

/** @param {number} n */
const fmt = (n) => n.toLocaleString('en-US');
/** @param {number} ms */
const time = (ms) => new Date(ms).toLocaleTimeString();
/** @param {number} n */
const plural = (n) => (n === 1 ? '' : 's');

/**
 * The `i`th item of a list the caller knows is that long.
 * @template T
 * @param {readonly T[]} list
 * @param {number} i
 * @returns {T}
 */
function item(list, i) {
  if (i < 0 || i >= list.length) throw new RangeError(`no item ${i} of ${list.length}`);
  return /** @type {T} */ (list[i]);
}
