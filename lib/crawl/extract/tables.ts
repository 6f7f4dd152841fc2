/**
 * Copies of the private tables of htmlparser2 10.1.0's Parser (that version is pinned), which the link extractor
 * (lib/crawl/extract/pass.ts) replays over the Tokenizer: the elements an opening tag closes, void elements,
 * foreign-context elements and HTML integration points. test/unit/extract-tables.test.ts compares them with the
 * installed htmlparser2's, so a version that changes them fails until they are copied again.
 */

// As htmlparser2 10.1.0's Parser: the elements an opening tag closes when they are the current element.
const P_TAG = new Set(['p']);
const FORM_TAGS = new Set(['input', 'option', 'optgroup', 'select', 'button', 'datalist', 'textarea']);
const TABLE_SECTION_TAGS = new Set(['thead', 'tbody']);
const DD_DT_TAGS = new Set(['dd', 'dt']);
const RT_RP_TAGS = new Set(['rt', 'rp']);
export const OPEN_IMPLIES_CLOSE = new Map<string, Set<string>>([
  ['tr', new Set(['tr', 'th', 'td'])],
  ['th', new Set(['th'])],
  ['td', new Set(['thead', 'th', 'td'])],
  ['body', new Set(['head', 'link', 'script'])],
  ['li', new Set(['li'])],
  ['p', P_TAG],
  ['h1', P_TAG],
  ['h2', P_TAG],
  ['h3', P_TAG],
  ['h4', P_TAG],
  ['h5', P_TAG],
  ['h6', P_TAG],
  ['select', FORM_TAGS],
  ['input', FORM_TAGS],
  ['output', FORM_TAGS],
  ['button', FORM_TAGS],
  ['datalist', FORM_TAGS],
  ['textarea', FORM_TAGS],
  ['option', new Set(['option'])],
  ['optgroup', new Set(['optgroup', 'option'])],
  ['dd', DD_DT_TAGS],
  ['dt', DD_DT_TAGS],
  ['address', P_TAG],
  ['article', P_TAG],
  ['aside', P_TAG],
  ['blockquote', P_TAG],
  ['details', P_TAG],
  ['div', P_TAG],
  ['dl', P_TAG],
  ['fieldset', P_TAG],
  ['figcaption', P_TAG],
  ['figure', P_TAG],
  ['footer', P_TAG],
  ['form', P_TAG],
  ['header', P_TAG],
  ['hr', P_TAG],
  ['main', P_TAG],
  ['nav', P_TAG],
  ['ol', P_TAG],
  ['pre', P_TAG],
  ['section', P_TAG],
  ['table', P_TAG],
  ['ul', P_TAG],
  ['rt', RT_RP_TAGS],
  ['rp', RT_RP_TAGS],
  ['tbody', TABLE_SECTION_TAGS],
  ['tfoot', TABLE_SECTION_TAGS],
]);
export const VOID_ELEMENTS = new Set([
  'area',
  'base',
  'basefont',
  'br',
  'col',
  'command',
  'embed',
  'frame',
  'hr',
  'img',
  'input',
  'isindex',
  'keygen',
  'link',
  'meta',
  'param',
  'source',
  'track',
  'wbr',
]);
const FOREIGN_CONTEXT_ELEMENTS = new Set(['math', 'svg']);
const HTML_INTEGRATION_ELEMENTS = new Set([
  'mi',
  'mo',
  'mn',
  'ms',
  'mtext',
  'annotation-xml',
  'foreignobject',
  'desc',
  'title',
]);

/**
 * The Parser tables above, together only so test/unit/extract-tables.test.ts can hold them to the installed
 * htmlparser2's own; the extractor reads them through OPEN_IMPLIES_CLOSE, VOID_ELEMENTS and {@link contextOf}.
 * @internal
 */
export const PARSER_TABLES = {
  openImpliesClose: OPEN_IMPLIES_CLOSE,
  voidElements: VOID_ELEMENTS,
  foreignContextElements: FOREIGN_CONTEXT_ELEMENTS,
  htmlIntegrationElements: HTML_INTEGRATION_ELEMENTS,
} as const;

/**
 * The foreign-context change an element makes when it opens or closes: `true` for `<svg>` and `<math>`,
 * `false` for HTML integration points, undefined for the rest.
 */
export function contextOf(name: string): boolean | undefined {
  if (FOREIGN_CONTEXT_ELEMENTS.has(name)) return true;
  return HTML_INTEGRATION_ELEMENTS.has(name) ? false : undefined;
}
