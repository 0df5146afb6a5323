// Mailbox credentials sealed at rest: what the domains that store or read a mailbox use from here.
export { sealMailbox } from './accounts.js';
